//go:build !linux

package engine

import (
	"runtime"
	"time"
)

// usableCPUs is the number of CPUs the process may use.
func usableCPUs() int { return min(runtime.NumCPU(), runtime.GOMAXPROCS(0)) }

// loadAverage is unknown here.
func loadAverage() float64 { return -1 }

// runQueueWait is unknown here.
func runQueueWait() (time.Duration, bool) { return 0, false }
