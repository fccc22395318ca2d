package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// A pipeNet is an in-memory network for testing/synctest bubbles: a real
// net/http server and client talk over net.Pipe connections, whose
// blocking is visible to the bubble, so fake time advances only when every
// goroutine waits.
type pipeNet struct {
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	srv    *http.Server
	client *http.Client
}

func newPipeNet(h http.Handler) *pipeNet {
	p := &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})}
	p.srv = &http.Server{Handler: h}
	go func() { _ = p.srv.Serve(p) }()
	p.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, s := net.Pipe()
			select {
			case p.conns <- s:
				return c, nil
			case <-p.done:
				return nil, net.ErrClosed
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		MaxIdleConnsPerHost: 1000,
	}}
	return p
}

// Accept, Close and Addr make a pipeNet the server's listener.
func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *pipeNet) Addr() net.Addr { return pipeAddr{} }

// shutdown closes the client's idle connections and the server.
func (p *pipeNet) shutdown(tb testing.TB) {
	p.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		tb.Errorf("shutdown: %v", err)
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
