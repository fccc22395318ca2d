// Package cpuset splits the machine's CPUs between the server under test
// and the load generator, so that a busy server cannot starve the
// generator (and the generator cannot slow the server) on a machine with
// the cores for it.
//
// The split is half and half of the CPUs this process may run on: the
// target container gets the lower half (Docker's --cpuset-cpus) and every
// thread of this process is pinned to the upper half. With fewer than
// MinCPUs CPUs each side would get one, which starves the Go runtime and a
// real server alike, so the CPUs stay shared and the harness health
// checks (lateness, CPU, scheduling delay) are what catch a starved
// generator.
package cpuset

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MinCPUs is the fewest CPUs Isolate splits: two for each side.
const MinCPUs = 4

// Shared is the benchfmt value of CPUs that are not split.
const Shared = "shared"

// A Split says which CPUs the target and the load generator run on.
type Split struct {
	// Target is the target container's CPU list in Docker's form
	// ("0-1"), "" when the CPUs are shared.
	Target string
	// Client is the load generator's CPU list, "" when shared.
	Client string
}

// String is the split as the benchfmt configuration records it:
// "target=0-1 client=2-3", or "shared".
func (s Split) String() string {
	if s.Target == "" {
		return Shared
	}
	return "target=" + s.Target + " client=" + s.Client
}

// Halve splits a list of CPUs: the lower half for the target, the upper
// half for the generator (the odd one out goes to the generator), or
// nothing with fewer than MinCPUs.
func Halve(cpus []int) (target, client []int) {
	if len(cpus) < MinCPUs {
		return nil, nil
	}
	cpus = slices.Sorted(slices.Values(cpus))
	half := len(cpus) / 2
	return cpus[:half], cpus[half:]
}

// Format writes a CPU list as Linux and Docker do: "0-3,6".
func Format(cpus []int) string {
	cpus = slices.Sorted(slices.Values(cpus))
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		p := strconv.Itoa(cpus[i])
		if j > i {
			p += "-" + strconv.Itoa(cpus[j])
		}
		parts = append(parts, p)
		i = j + 1
	}
	return strings.Join(parts, ",")
}

var (
	once   sync.Once
	split  Split
	errPin error
)

// Isolate splits the CPUs once per process (the pinning holds for the
// whole process, so every container target it starts gets the same
// split) and returns the split; a shared one, with the error, when this
// process could not be pinned. GOMAXPROCS keeps its value, so benchmark
// names keep their -N suffix.
func Isolate() (Split, error) {
	once.Do(func() {
		cpus, err := usable()
		if err != nil {
			errPin = err
			return
		}
		target, client := Halve(cpus)
		if target == nil {
			return
		}
		// Freeze GOMAXPROCS first: the runtime would otherwise lower it
		// to the new mask's size, which renames the benchmarks mid-run
		// (their -N suffix) and splits their results.
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
		if err := pin(client); err != nil {
			errPin = err
			return
		}
		split = Split{Target: Format(target), Client: Format(client)}
	})
	return split, errPin
}
