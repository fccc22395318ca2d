package client

import (
	"net"
	"sync"
)

// A connPool keeps idle connections to one address, the newest last: the
// own transport's kept-alive connections, and a Warmer's connections for
// one address.
type connPool[C net.Conn] struct {
	mu    sync.Mutex
	conns []C
}

// pop returns the newest connection that is still open (see open),
// closing those the server closed while they waited; ok is false when
// none is left.
func (p *connPool[C]) pop() (c C, ok bool) {
	var zero C
	for {
		p.mu.Lock()
		n := len(p.conns)
		if n == 0 {
			p.mu.Unlock()
			return zero, false
		}
		c = p.conns[n-1]
		p.conns[n-1] = zero
		p.conns = p.conns[:n-1]
		p.mu.Unlock()
		if open(c) {
			return c, true
		}
		c.Close()
	}
}

// put keeps c unless limit connections are held already; it reports
// whether it kept c.
func (p *connPool[C]) put(c C, limit int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.conns) >= limit {
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

// add keeps cs.
func (p *connPool[C]) add(cs []C) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, cs...)
}

// closeAll closes the connections and forgets them.
func (p *connPool[C]) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// open reports whether an idle connection is still open (see alive).
func open(c net.Conn) bool {
	if s, ok := c.(*stampedConn); ok {
		c = s.Conn
	}
	return alive(c)
}
