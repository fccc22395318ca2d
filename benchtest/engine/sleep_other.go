//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package engine

import "time"

// threadSleep is not available here; the dispatcher spins instead.
func threadSleep(time.Duration) bool { return false }
