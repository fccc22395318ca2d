//go:build !linux

package engine

import "time"

// threadSleep is not available here; the dispatcher spins instead.
func threadSleep(time.Duration) bool { return false }
