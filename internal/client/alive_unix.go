//go:build linux || darwin || freebsd || netbsd || openbsd

package client

import (
	"net"
	"syscall"
)

// alive reports whether a connection that has not carried a request yet
// is still open: a non-blocking peek sees the server's close (EOF) or an
// unsolicited answer (such as a 408 for an idle connection), either of
// which makes it unusable.
func alive(c net.Conn) bool {
	rc, ok := rawConn(c)
	if !ok {
		return true
	}
	live := true
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		// Only "nothing to read yet" means open and idle; EOF (n == 0),
		// data (n > 0) and errors do not.
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		live = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return live
}

// rawConn returns c's file descriptor access, when it has one.
func rawConn(c net.Conn) (syscall.RawConn, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}
