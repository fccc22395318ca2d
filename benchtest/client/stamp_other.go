//go:build !linux

package client

import "net"

// kernelStamps reads plainly where no kernel receive time is available:
// reads are stamped when they return.
type kernelStamps struct{}

func newStampedConn(c net.Conn) *stampedConn { return &stampedConn{Conn: c} }

func (kernelStamps) read(c net.Conn, p []byte) (int, int64, error) {
	n, err := c.Read(p)
	return n, 0, err
}
