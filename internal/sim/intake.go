package sim

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/servegate/servegate/internal/kstamp"
)

// StampListener wraps ln so that the ground truth can say when each
// request reached the server's socket: its connections read with the
// kernel's receive stamps (see package kstamp). The handler's arrival,
// which every other time of the ground truth counts from, comes after the
// HTTP server has read and parsed the request; the gap, intake_ms, is the
// time the request waited for the server (an accept queue, a busy CPU)
// that a client's TTFT includes and the server's own TTFT does not. Serve
// with ConnContext set, or the stamps are not found.
func StampListener(ln net.Listener) net.Listener { return stampListener{ln} }

type stampListener struct{ net.Listener }

func (l stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &intakeConn{Conn: c, rd: kstamp.Enable(c)}, nil
}

// ConnContext is the http.Server ConnContext that lets the handlers find
// a StampListener connection's receive stamps.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if ic, ok := c.(*intakeConn); ok {
		return context.WithValue(ctx, intakeKey{}, ic)
	}
	return ctx
}

type intakeKey struct{}

// An intakeConn notes the receive stamp of the first read of each
// request: the first read that returns data after the server last wrote
// (HTTP/1.1 without pipelining: a request is read whole before its answer
// is written, and the next one comes after).
type intakeConn struct {
	net.Conn
	rd *kstamp.Reader // used by the one goroutine that reads

	mu      sync.Mutex
	pending bool      // data read since the last write
	first   time.Time // the receive stamp of that first read (zero: none)
}

func (c *intakeConn) Read(p []byte) (int, error) {
	n, at, err := c.rd.Read(c.Conn, p)
	if n > 0 {
		c.mu.Lock()
		if !c.pending {
			c.pending, c.first = true, at
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *intakeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.pending, c.first = false, time.Time{}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// received is when the request being served reached the socket, the zero
// time when that is not known.
func (c *intakeConn) received() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

// receivedAt is when r reached the server's socket, or the zero time.
func receivedAt(r *http.Request) time.Time {
	if ic, ok := r.Context().Value(intakeKey{}).(*intakeConn); ok {
		return ic.received()
	}
	return time.Time{}
}
