package client

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/servegate/servegate/internal/kstamp"
)

// stampBase is the zero of a stampedConn's times: a monotonic reading, so
// that the times do not move with the wall clock.
var stampBase = time.Now()

// A stampedConn is a warm connection that notes the instants a benchmark
// wants and a goroutine cannot see: when the request went out (the entry
// of the first write after arm) and when the bytes of the latest read
// came in (the kernel's receive time of the last segment the read took,
// SO_TIMESTAMPNS, where the platform has it; see package kstamp). With a
// thousand streams on two cores, the goroutine that reads a chunk can run
// milliseconds after the chunk arrived, and the one that sends a request
// milliseconds after the request was due: those delays are the client's,
// not the server's, and a TTFT taken from these instants leaves them out.
//
// Times are nanoseconds since stampBase; 0 means not known.
type stampedConn struct {
	net.Conn
	sent atomic.Int64
	recv atomic.Int64
	rx   *kstamp.Reader
}

// newStampedConn wraps c, asking the kernel to stamp what c receives;
// where it cannot, reads are stamped when they return.
func newStampedConn(c net.Conn) *stampedConn {
	return &stampedConn{Conn: c, rx: kstamp.Enable(c)}
}

// arm forgets the previous request's instants; the next write is the
// start of a new request.
func (c *stampedConn) arm() {
	c.sent.Store(0)
	c.recv.Store(0)
}

func (c *stampedConn) Write(p []byte) (int, error) {
	if c.sent.Load() == 0 {
		c.sent.CompareAndSwap(0, int64(time.Since(stampBase)))
	}
	return c.Conn.Write(p)
}

func (c *stampedConn) Read(p []byte) (int, error) {
	n, at, err := c.rx.Read(c.Conn, p)
	if n > 0 {
		if at.IsZero() {
			c.recv.Store(int64(time.Since(stampBase)))
		} else {
			c.recv.Store(int64(at.Sub(stampBase)))
		}
	}
	return n, err
}

// since converts a stamp to a time since epoch, or returns ok false when
// the stamp is unknown.
func since(stamp int64, epoch time.Time) (time.Duration, bool) {
	if stamp == 0 {
		return 0, false
	}
	return stampBase.Add(time.Duration(stamp)).Sub(epoch), true
}

// at is when the bytes of the latest read arrived, as a time since epoch;
// before any read it asks now.
func (c *stampedConn) at(epoch time.Time, now func() time.Duration) time.Duration {
	if d, ok := since(c.recv.Load(), epoch); ok {
		return d
	}
	return now()
}
