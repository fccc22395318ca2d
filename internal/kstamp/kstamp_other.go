//go:build !linux

package kstamp

import (
	"net"
	"time"
)

// A Reader reads one connection; on this platform it has no kernel
// stamps and every read returns the zero time.
type Reader struct{}

// Enable returns a plain Reader: this platform has no receive stamps.
func Enable(c net.Conn) *Reader { return &Reader{} }

// Stamping reports false: this platform has no receive stamps.
func (r *Reader) Stamping() bool { return false }

// Read reads from c into p; there is no kernel stamp here.
func (r *Reader) Read(c net.Conn, p []byte) (int, time.Time, error) {
	n, err := c.Read(p)
	return n, time.Time{}, err
}
