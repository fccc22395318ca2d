//go:build linux || darwin || freebsd || netbsd || openbsd

package engine

import (
	"syscall"
	"time"
)

// threadSleep blocks the calling thread for d with nanosleep, which wakes
// within the kernel's timer slack (50 µs by default on Linux) instead of
// Go timers' millisecond; the runtime hands the goroutine's processor to
// other goroutines meanwhile. It reports whether it slept.
func threadSleep(d time.Duration) bool {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // an early (EINTR) return just loops
	return true
}
