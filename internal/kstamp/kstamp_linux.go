package kstamp

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// A Reader reads one connection with recvmsg and the kernel's receive
// stamps. It is not safe for concurrent use (one reader per connection,
// as TCP reads are anyway). Its zero value reads plainly.
type Reader struct {
	raw syscall.RawConn
	oob [64]byte
	// The pending call's arguments and results, so that the closure given
	// to raw.Read is made once and the read path allocates nothing.
	p        []byte
	n, oobn  int
	err      error
	recvFunc func(fd uintptr) bool
}

// Enable asks the kernel to stamp what c receives and returns a Reader
// for c, or a plain Reader when c has no file descriptor or the kernel
// refuses. The kernel turns stamping on a little after the first socket
// asks, so the first reads of the first connection may come unstamped.
func Enable(c net.Conn) *Reader {
	r := &Reader{}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return r
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return r
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return r
	}
	r.raw = raw
	r.recvFunc = r.recv
	return r
}

// Stamping reports whether the kernel agreed to stamp the connection.
func (r *Reader) Stamping() bool { return r.raw != nil }

func (r *Reader) recv(fd uintptr) bool {
	r.n, r.oobn, _, _, r.err = syscall.Recvmsg(int(fd), r.p, r.oob[:], 0)
	return r.err != syscall.EAGAIN && r.err != syscall.EWOULDBLOCK
}

// Read reads from c (the connection r was enabled on) into p and returns
// the kernel's receive time of the data, the zero time when there is
// none. Its errors are net.Conn's: io.EOF at the end, a *net.OpError
// otherwise.
func (r *Reader) Read(c net.Conn, p []byte) (int, time.Time, error) {
	if r.raw == nil {
		n, err := c.Read(p)
		return n, time.Time{}, err
	}
	if len(p) == 0 {
		return 0, time.Time{}, nil
	}
	r.p, r.n, r.oobn, r.err = p, 0, 0, nil
	err := r.raw.Read(r.recvFunc)
	r.p = nil
	if err != nil {
		return 0, time.Time{}, err // already a *net.OpError (closed, deadline)
	}
	n, err := r.n, r.err
	if err != nil {
		return 0, time.Time{}, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("recvmsg", err)}
	}
	if n == 0 {
		return 0, time.Time{}, io.EOF
	}
	return n, r.stamp(), nil
}

// stamp finds SCM_TIMESTAMPNS among the control messages of the last
// recvmsg.
func (r *Reader) stamp() time.Time {
	b := r.oob[:r.oobn]
	align := int(unsafe.Sizeof(uintptr(0)))
	for len(b) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
		if int(h.Len) < syscall.SizeofCmsghdr || int(h.Len) > len(b) {
			return time.Time{}
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS &&
			int(h.Len) >= syscall.SizeofCmsghdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&b[syscall.SizeofCmsghdr]))
			return fromAgo(ts.Nano())
		}
		step := (int(h.Len) + align - 1) &^ (align - 1)
		if step >= len(b) {
			break
		}
		b = b[step:]
	}
	return time.Time{}
}
