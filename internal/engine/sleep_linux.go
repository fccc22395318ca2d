package engine

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// maxThreadSleep bounds one thread sleep. The sleeping goroutine keeps its
// processor and cannot be preempted until the sleep returns, so this is
// also the longest it can hold up a garbage-collector stop.
const maxThreadSleep = 200 * time.Microsecond

// threadSleep blocks the calling thread for up to d (at most
// maxThreadSleep) with a raw nanosleep, which wakes within the thread's
// timer slack instead of Go timers' millisecond. The goroutine keeps its
// processor (P) while it sleeps, so the runtime cannot hand the P to
// another goroutine and make this one queue for it when it wakes; other
// goroutines run on the other processors. With a single P that would stall
// every other goroutine, stream readers included: then it does not sleep
// and reports false (the caller spins, yielding). It reports whether it
// slept.
func threadSleep(d time.Duration) bool {
	if runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	ts := syscall.NsecToTimespec(int64(min(d, maxThreadSleep)))
	// An early (EINTR) return just loops in the caller.
	_, _, _ = syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
	return true
}
