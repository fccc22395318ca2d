package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// usableCPUs is the number of CPUs the process may run on now (its
// affinity mask, which a CPU set narrows), at most GOMAXPROCS.
func usableCPUs() int {
	n := runtime.NumCPU()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		n = set.Count()
	}
	return min(n, runtime.GOMAXPROCS(0))
}

// loadAverage is the machine's one-minute load average, -1 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// runQueueWait is how long the threads of this process have waited, in
// total, for a CPU while runnable (the kernel's schedstat run_delay), and
// whether it could be read. Threads that exited take their share with
// them, so the figure errs low.
func runQueueWait() (time.Duration, bool) {
	paths, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil || len(paths) == 0 {
		return 0, false
	}
	var total time.Duration
	read := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		total += time.Duration(ns)
		read++
	}
	return total, read > 0
}
