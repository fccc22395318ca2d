package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file is the client's own HTTP/1.1 transport, used for http:// URLs
// that no proxy applies to when Client.HTTP is nil. It exists for what an
// open stream costs: with net/http a stream holds three goroutines (the
// caller's and the connection's read and write loops), a bufio reader
// and writer and the chunked reader's layers; here it holds the caller's
// goroutine and one read buffer, into which the body is read and its
// chunked framing decoded in place (h1body.go), and from which the SSE
// parser takes its lines. The request is written in one write from bytes
// built by Prepare; a request's timeout is the connection's deadline, and
// cancellation moves that deadline into the past (context.AfterFunc), so
// nothing waits beside the caller.

// An h1Transport sends requests to one URL over kept-alive connections.
type h1Transport struct {
	addr    string // host:port dialled, the pool's key
	maxIdle int    // idle connections kept per host
	warmer  *Warmer
	dialer  net.Dialer

	idle connPool[net.Conn]

	// late, when set (by tests), runs before the request is written and
	// after its head was read: a client whose goroutine runs late.
	late func()
}

// newH1Transport returns the transport for u, or nil when net/http must
// send to it: https, a proxy from the environment, or credentials in the
// URL.
func newH1Transport(u *url.URL, w *Warmer, maxIdle int) *h1Transport {
	if u.Scheme != "http" || u.Host == "" || u.User != nil {
		return nil
	}
	if proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || proxy != nil {
		return nil
	}
	return &h1Transport{
		addr:    hostPort(u),
		maxIdle: cmp.Or(max(maxIdle, 0), 4096),
		warmer:  w,
		dialer:  net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
	}
}

// hostPort is the address a URL's requests go to.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// requestHead writes a request's head as net/http would (fields sorted,
// no Accept-Encoding) followed by the body, all in one buffer, so that
// the request goes out in one write. It refuses header fields that
// net/http refuses.
func requestHead(u *url.URL, h http.Header, body []byte) ([]byte, error) {
	keys := make([]string, 0, len(h))
	for k := range h {
		if !validFieldName(k) {
			return nil, fmt.Errorf("build request: invalid header field name %q", k)
		}
		for _, v := range h[k] {
			if !validFieldValue(v) {
				return nil, fmt.Errorf("build request: invalid header field value for %q", k)
			}
		}
		if k != "Host" && k != "Content-Length" && k != "Transfer-Encoding" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b := make([]byte, 0, 128+len(body)+32*len(keys))
	b = append(b, "POST "...)
	b = append(b, u.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, u.Host...)
	if _, ok := h["User-Agent"]; !ok {
		b = append(b, "\r\nUser-Agent: Go-http-client/1.1"...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n"...)
	for _, k := range keys {
		for _, v := range h[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, strings.TrimSpace(v)...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	return append(b, body...), nil
}

// validFieldName reports whether k is an HTTP token.
func validFieldName(k string) bool {
	if len(k) == 0 {
		return false
	}
	for i := range len(k) {
		if !tokenByte(k[i]) {
			return false
		}
	}
	return true
}

// tokenByte reports whether c may be part of an HTTP token.
func tokenByte(c byte) bool {
	return c > ' ' && c < 0x7f && strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) < 0
}

// validFieldValue reports whether v holds no control byte but tab.
func validFieldValue(v string) bool {
	for i := range len(v) {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// closesConnection reports whether h asks the server to close the
// connection after the response.
func closesConnection(h http.Header) bool {
	for _, v := range h["Connection"] {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "close") {
				return true
			}
		}
	}
	return false
}

// get returns a connection: the newest idle one that is still open, else
// a warm one, else a new one (fresh skips the idle and warm ones). reused
// is true for an idle or warm connection, which has carried a request
// before.
func (t *h1Transport) get(ctx context.Context, deadline time.Time, fresh bool) (c net.Conn, reused bool, err error) {
	if !fresh {
		if c, ok := t.idle.pop(); ok {
			return c, true, nil
		}
		if t.warmer != nil {
			if c := t.warmer.take(t.addr); c != nil {
				return c, true, nil
			}
		}
	}
	raw, err := t.dial(ctx, deadline)
	if err != nil {
		return nil, false, err
	}
	if t.warmer != nil {
		return newStampedConn(raw), false, nil
	}
	return raw, false, nil
}

// A dialed is a dial's outcome.
type dialed struct {
	conn net.Conn
	err  error
}

// dial connects to the transport's address in a goroutine of its own,
// which ends with the dial: the dial's deep call chain grows that
// goroutine's stack and not the request's, which then stays within its
// first few KiB for the whole stream.
func (t *h1Transport) dial(ctx context.Context, deadline time.Time) (net.Conn, error) {
	done := make(chan dialed, 1)
	go func() {
		d := t.dialer
		d.Deadline = deadline
		c, err := d.DialContext(ctx, "tcp", t.addr)
		done <- dialed{c, err}
	}()
	r := <-done
	return r.conn, r.err
}

// put keeps c for a later request, or closes it when the pool is full.
func (t *h1Transport) put(c net.Conn) {
	if !t.idle.put(c, t.maxIdle) {
		c.Close()
	}
}

// closeIdle closes the idle connections.
func (t *h1Transport) closeIdle() { t.idle.closeAll() }

// An h1Exchange is one request on one connection, from its write to the
// end of its response.
type h1Exchange struct {
	t        *h1Transport
	conn     net.Conn
	stamped  *stampedConn // conn, when it is stamped
	deadline bool         // conn has the request's deadline
	stop     func() bool  // stops the cancellation
	head     respHead
	body     h1Body
	// keep is false when the request asked the server to close the
	// connection.
	keep bool
}

// send writes the prepared request and reads its response head into
// buf (the stream's read buffer). It returns the exchange, the buffer
// (grown for a long head) and how many decoded body bytes are at its
// front. A request whose write fails before any byte of it went out on a
// reused connection (one the server may have closed while it was idle)
// is sent once more on a new connection; one that was written, even in
// part, never is: a POST is not sent twice.
// cutAnswerWait is how long a request whose connection the server closed
// while it was being sent waits for the server's answer already on its
// way (a 4xx the server wrote before it closed).
const cutAnswerWait = 2 * time.Second

// A SendCutError is a request whose connection the server closed (reset)
// while the request was being sent, with no answer: the request, not the
// server's readiness, is at fault (a request too big, most often), and
// sending it again would meet the same end.
type SendCutError struct {
	Sent, Total int // bytes written of the request's bytes
}

func (e *SendCutError) Error() string {
	return fmt.Sprintf("the server closed the connection while the request was being sent (%d of %d bytes sent) and gave no answer: the request may be too big for it", e.Sent, e.Total)
}

func (t *h1Transport) send(ctx context.Context, p *Prepared, timeout time.Duration, buf []byte) (*h1Exchange, []byte, int, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for retry := false; ; retry = true {
		conn, reused, err := t.get(ctx, deadline, retry)
		if err != nil {
			return nil, buf, 0, err
		}
		x := &h1Exchange{t: t, conn: conn, keep: !p.close}
		x.stamped, _ = conn.(*stampedConn)
		if !deadline.IsZero() {
			x.deadline = true
			_ = conn.SetDeadline(deadline)
		}
		x.stop = context.AfterFunc(ctx, x.cancel)
		if x.stamped != nil {
			x.stamped.arm()
		}
		if t.late != nil {
			t.late()
		}
		n, err := conn.Write(p.wire)
		if err != nil && reused && n == 0 && !retry && ctx.Err() == nil {
			x.close()
			continue
		}
		if err != nil && n > 0 && n < len(p.wire) && ctx.Err() == nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
			// The server closed the connection in the middle of the
			// request: a server that refuses a request too big answers
			// first (4xx) and closes with the rest of the body unread.
			// Its answer is read, if it sent one; the request is never
			// sent again.
			sent, total := n, len(p.wire)
			p.wire = nil
			wait := time.Now().Add(cutAnswerWait)
			if !deadline.IsZero() && deadline.Before(wait) {
				wait = deadline
			}
			_ = conn.SetDeadline(wait)
			x.deadline = true
			x.keep = false
			x.head, buf, n, err = readHead(conn, buf)
			if err == nil {
				n, err = x.body.start(conn, x.head, buf, n)
			}
			if err != nil {
				x.close()
				return nil, buf, 0, &SendCutError{Sent: sent, Total: total}
			}
			return x, buf, n, nil
		}
		if err != nil {
			x.close()
			return nil, buf, 0, err
		}
		p.wire = nil // written: never sent again
		x.head, buf, n, err = readHead(conn, buf)
		if err == nil {
			n, err = x.body.start(conn, x.head, buf, n)
		}
		if err != nil {
			x.close()
			return nil, buf, 0, err
		}
		if t.late != nil {
			t.late()
		}
		return x, buf, n, nil
	}
}

// cancel ends the exchange's blocking calls at once: the run or the
// request was canceled.
func (x *h1Exchange) cancel() { _ = x.conn.SetDeadline(time.Unix(1, 0)) }

// close closes the connection.
func (x *h1Exchange) close() {
	x.stop()
	x.conn.Close()
}

// finish ends the exchange: the connection goes back to the pool when
// its response was read to the end and neither side asked to close it,
// and is closed otherwise (a stream cut short, a failure, a
// cancellation).
func (x *h1Exchange) finish() {
	canceled := !x.stop()
	if canceled || !x.keep || x.head.close || x.body.mode == bodyClose || !x.body.done || x.body.extra {
		x.conn.Close()
		return
	}
	if x.deadline {
		if err := x.conn.SetDeadline(time.Time{}); err != nil {
			x.conn.Close()
			return
		}
	}
	x.t.put(x.conn)
}
