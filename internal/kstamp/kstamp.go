// Package kstamp reads from a TCP connection with the kernel's receive
// time of the bytes read (SO_TIMESTAMPNS, Linux): the instant the data
// reached the socket, which a goroutine that reads it later cannot see.
// The load generator times chunks by it; the simulator times a request's
// arrival by it, so that its ground truth can say how long the request
// waited before the server's handler took it.
//
// For TCP, Linux gives the time of the last segment a read consumed, so a
// stamp is never earlier than any byte the read returned. Where there is
// no stamp (another platform, a connection without a file descriptor,
// stamping not yet on in the kernel) a read returns the zero time and the
// caller uses its own clock.
package kstamp

import "time"

// maxAgo bounds how old a stamp may be: an older one means the wall
// clock stepped between the kernel's stamp and the read, and is dropped.
const maxAgo = time.Minute

// fromAgo turns the kernel's wall-clock stamp into a time on the
// monotonic clock, by how long ago it was taken (the distance is
// microseconds, over which the two clocks agree).
func fromAgo(stampNS int64) time.Time {
	now := time.Now()
	ago := now.UnixNano() - stampNS
	if ago < 0 || ago > int64(maxAgo) {
		return time.Time{}
	}
	return now.Add(-time.Duration(ago))
}
