package client

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// MaxWarmConnections bounds how many connections a Warmer dials for one
// run (each is a file descriptor and a server-side connection).
const MaxWarmConnections = 4096

// A Warmer dials TCP connections before a run and hands them to the
// requests as they need new ones, so that a request's TTFT does not
// include connection set-up and the server's accept queue: with a
// thousand streams starting at once, those are most of what a client adds
// to the server's own TTFT. Each warm connection carries one GET /health
// (any complete answer will do) so that the server has accepted it and
// is reading from it before the run starts. A connection the server
// closed while it waited is dropped and a new one dialled.
//
// A Client with a Warmer (Client.Warmer) takes its warm connections
// before dialling, and keeps them in its pool after; an *http.Client
// takes them through DialContext (NewWarmHTTPClient). Either way the
// connections are stamped (stampedConn): requests over them are timed
// from the instant they are written and chunks from the instant they
// arrive.
//
// vllm bench serve opens its connections as requests go out; scenarios
// warm by default, `servegate bench` only with --warm-connections.
type Warmer struct {
	dialer net.Dialer
	mu     sync.Mutex
	idle   map[string]*connPool[*stampedConn] // by dial address
}

// NewWarmer returns a Warmer holding no connections yet.
func NewWarmer() *Warmer {
	return &Warmer{dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, idle: map[string]*connPool[*stampedConn]{}}
}

// NewWarmHTTPClient is NewHTTPClient with a Warmer behind its dials.
func NewWarmHTTPClient(maxConns int) (*http.Client, *Warmer) {
	w := NewWarmer()
	h := NewHTTPClient(maxConns)
	h.Transport.(*http.Transport).DialContext = w.DialContext
	return h, w
}

// DialContext returns a warm connection to addr when one is left, else
// dials. Either way the connection is stamped.
func (w *Warmer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if c := w.take(addr); c != nil {
		return c, nil
	}
	c, err := w.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return newStampedConn(c), nil
}

// take returns a warm connection to addr that is still open, or nil.
func (w *Warmer) take(addr string) *stampedConn {
	w.mu.Lock()
	p := w.idle[addr]
	w.mu.Unlock()
	if p == nil {
		return nil
	}
	c, _ := p.pop()
	return c
}

// pool is the pool of addr's warm connections.
func (w *Warmer) pool(addr string) *connPool[*stampedConn] {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.idle[addr]
	if p == nil {
		p = new(connPool[*stampedConn])
		w.idle[addr] = p
	}
	return p
}

// Warm dials n connections to baseURL's host, 64 at a time, and keeps
// them for the transport. It returns how many it holds; a dial error
// stops it (the run then dials as it goes, as vLLM does).
func (w *Warmer) Warm(ctx context.Context, baseURL string, n int) (int, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return 0, fmt.Errorf("warm connections: %w", err)
	}
	addr := hostPort(u)
	n = min(n, MaxWarmConnections)
	sem := make(chan struct{}, 64)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		got   []*stampedConn
	)
	for range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var c *stampedConn
			raw, err := w.dialer.DialContext(ctx, "tcp", addr)
			if err == nil {
				// Stamped from the start: the kernel turns receive
				// stamping on a little after the first socket asks.
				c = newStampedConn(raw)
				if err = probe(ctx, c, u.Host); err != nil {
					c.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				first = cmp.Or(first, err) // the first error says why
				return
			}
			got = append(got, c)
		}()
	}
	wg.Wait()
	w.pool(addr).add(got)
	if first != nil {
		return len(got), fmt.Errorf("warm connections to %s: %w", addr, first)
	}
	return len(got), nil
}

// probe sends GET /health on a fresh connection and reads the whole
// answer, leaving the connection idle and known to the server.
func probe(ctx context.Context, c net.Conn, host string) error {
	deadline := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	req, err := http.NewRequest(http.MethodGet, "http://"+host+"/health", nil)
	if err != nil {
		return err
	}
	if err := req.Write(c); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.Close {
		err = fmt.Errorf("GET /health closed the connection (%s)", resp.Status)
	}
	return err
}

// Close closes the warm connections no request took.
func (w *Warmer) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.idle {
		p.closeAll()
	}
}
