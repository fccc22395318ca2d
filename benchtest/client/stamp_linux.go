package client

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// kernelStamps reads with recvmsg and takes the kernel's receive time of
// the data (SO_TIMESTAMPNS, which Linux gives for TCP: the time of the
// last segment the call consumed, so never earlier than any byte it
// returned). Without a raw connection it reads plainly.
type kernelStamps struct {
	raw syscall.RawConn
	oob [64]byte
	// The pending call's arguments and results, so that the closure given
	// to raw.Read is made once (the read path allocates nothing).
	p        []byte
	n, oobn  int
	err      error
	recvFunc func(fd uintptr) bool
}

// newStampedConn wraps c, asking the kernel to stamp what c receives;
// where it cannot, reads are stamped when they return.
func newStampedConn(c net.Conn) *stampedConn {
	sc := &stampedConn{Conn: c}
	raw, ok := rawConn(c)
	if !ok {
		return sc
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return sc
	}
	sc.rx.raw = raw
	sc.rx.recvFunc = sc.rx.recv
	return sc
}

func (k *kernelStamps) recv(fd uintptr) bool {
	k.n, k.oobn, _, _, k.err = syscall.Recvmsg(int(fd), k.p, k.oob[:], 0)
	return k.err != syscall.EAGAIN && k.err != syscall.EWOULDBLOCK
}

// read reads into p and returns the kernel's receive time of the data as
// nanoseconds since stampBase (0 when there is none).
func (k *kernelStamps) read(c net.Conn, p []byte) (int, int64, error) {
	if k.raw == nil {
		n, err := c.Read(p)
		return n, 0, err
	}
	if len(p) == 0 {
		return 0, 0, nil
	}
	k.p, k.n, k.oobn, k.err = p, 0, 0, nil
	if err := k.raw.Read(k.recvFunc); err != nil {
		k.p = nil
		return 0, 0, err // already a *net.OpError (closed, deadline)
	}
	k.p = nil
	n, err := k.n, k.err
	if err != nil {
		return 0, 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("recvmsg", err)}
	}
	if n == 0 {
		return 0, 0, io.EOF
	}
	return n, k.stamp(), nil
}

// stamp finds SCM_TIMESTAMPNS among the control messages of the last
// recvmsg and turns it into a time since stampBase, by how long ago the
// kernel took it (the kernel's clock is the wall clock; the distance is
// microseconds, over which the two clocks agree).
func (k *kernelStamps) stamp() int64 {
	b := k.oob[:k.oobn]
	for len(b) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
		if int(h.Len) < syscall.SizeofCmsghdr || int(h.Len) > len(b) {
			return 0
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS &&
			int(h.Len) >= syscall.SizeofCmsghdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&b[syscall.SizeofCmsghdr]))
			now := time.Now()
			ago := now.UnixNano() - ts.Nano()
			if ago < 0 || ago > int64(time.Minute) {
				return 0 // a clock step: fall back to the read's own time
			}
			return int64(now.Sub(stampBase)) - ago
		}
		step := (int(h.Len) + int(unsafe.Sizeof(uintptr(0))) - 1) &^ (int(unsafe.Sizeof(uintptr(0))) - 1)
		if step >= len(b) {
			break
		}
		b = b[step:]
	}
	return 0
}
