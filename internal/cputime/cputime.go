// Package cputime reads the CPU time of this process, for benchmarks that
// report CPU per item rather than wall time on a shared machine.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time the process has used so far (user plus system),
// or 0 where it cannot be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
