//go:build linux || darwin || freebsd || netbsd || openbsd

package engine

import (
	"runtime"
	"syscall"
	"time"
)

// threadSleep blocks the calling thread for d with nanosleep, which wakes
// within the kernel's timer slack (50 µs by default on Linux) instead of
// Go timers' millisecond. The goroutine keeps its processor (P) until the
// runtime's monitor takes it back, so with a single P every other
// goroutine, stream readers included, would stall for up to d: then it
// does not sleep and reports false (the caller spins, yielding). It
// reports whether it slept.
func threadSleep(d time.Duration) bool {
	if runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // an early (EINTR) return just loops
	return true
}
