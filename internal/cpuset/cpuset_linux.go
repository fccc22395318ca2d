package cpuset

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// usable lists the CPUs this process may run on.
func usable() ([]int, error) {
	cpus, err := affinity(0)
	if err != nil {
		return nil, fmt.Errorf("cpuset: read affinity: %w", err)
	}
	return cpus, nil
}

// affinity lists the CPUs thread tid (0 for the caller) may run on.
func affinity(tid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// pin restricts every thread of this process to cpus. A thread inherits
// its creator's mask, so after a pass that finds no new thread every
// thread, present and future, is pinned.
func pin(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("cpuset: list threads: %w", err)
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			// A thread that exited meanwhile is no longer to pin.
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("cpuset: pin thread %d: %w", tid, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}
