package client

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stamped connection dates what it reads by the data's arrival, not by
// when the reader got to it: a read made 50 ms after the bytes came in is
// stamped at least 50 ms before it returned. (With the read's own time,
// which is what a plain connection gives, the gap would be about 0.)
func TestStampedConnDatesArrival(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	written := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			written <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 3)
		if _, err := c.Read(buf); err != nil {
			written <- err
			return
		}
		_, err = c.Write([]byte("data: x\n\n"))
		written <- err
		_, _ = c.Read(buf) // until the client closes
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	c := newStampedConn(raw)
	defer c.Close()
	require.True(t, c.rx.Stamping(), "SO_TIMESTAMPNS was refused")
	// The kernel switches receive stamping on shortly after the first
	// socket asks (a deferred static key); a warm connection is stamped
	// long before its run.
	time.Sleep(50 * time.Millisecond)
	c.arm()
	before := time.Since(stampBase)
	_, err = c.Write([]byte("go\n"))
	require.NoError(t, err)
	sent := time.Duration(c.sent.Load())
	assert.GreaterOrEqual(t, sent, before, "the send is stamped at the write")
	require.NoError(t, <-written)
	time.Sleep(50 * time.Millisecond)
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	returned := time.Since(stampBase)
	require.NoError(t, err)
	assert.Equal(t, "data: x\n\n", string(buf[:n]))
	recv := time.Duration(c.recv.Load())
	assert.Greater(t, recv, sent, "data cannot arrive before the request went out")
	assert.GreaterOrEqual(t, returned-recv, 50*time.Millisecond, "the read is stamped when it returned, not when the data arrived")

	// The server's close reads as io.EOF, as on a plain connection, and
	// a closed connection as net.ErrClosed.
	require.NoError(t, raw.(*net.TCPConn).CloseWrite())
	_, err = c.Read(buf)
	assert.Equal(t, io.EOF, err)
	c.Close()
	_, err = c.Read(buf)
	assert.ErrorIs(t, err, net.ErrClosed)
}

// lateTransport delays a round trip before and after the real one, as a
// busy client's scheduler would, and notes when the real one returned.
type lateTransport struct {
	http.RoundTripper
	before, after time.Duration
	now           func() time.Duration
	returned      time.Duration
}

func (l *lateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(l.before)
	resp, err := l.RoundTripper.RoundTrip(r)
	l.returned = l.now()
	time.Sleep(l.after)
	return resp, err
}

// Over a warm connection a request is timed from when it was written and
// its first chunk from when it arrived, however late the client's own
// goroutines ran: a start taken 50 ms before the write (vLLM's instant)
// or a chunk time taken 50 ms after its arrival would fail.
func TestWarmClientTimesTheWire(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"choices":[{"text":"a"}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		time.Sleep(5 * time.Millisecond)
		_, _ = w.Write([]byte(`data: {"choices":[{"text":"b"}]}` + "\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	h, w := NewWarmHTTPClient(1)
	defer w.Close()
	_, err := w.Warm(t.Context(), srv.URL, 1)
	require.NoError(t, err)
	c := newClient(BackendOpenAI, srv.URL)
	c.Epoch = time.Now()
	late := &lateTransport{RoundTripper: h.Transport, before: 50 * time.Millisecond, after: 50 * time.Millisecond, now: c.now}
	h.Transport = late
	c.HTTP = h
	called := c.now()
	rec := c.Do(t.Context(), Request{Prompt: "x", OutputLen: 2})
	require.True(t, rec.Success, rec.Error)
	assert.GreaterOrEqual(t, rec.Start, called+50*time.Millisecond, "the start is the write, after the client's delay")
	assert.LessOrEqual(t, rec.Start+rec.TTFT, late.returned, "the first chunk is dated by its arrival, before the client read it")
	checkTimings(t, rec)
	assert.Len(t, rec.ITL, 1)

	// Over a plain connection the instants stay vLLM's.
	c2 := newClient(BackendOpenAI, srv.URL)
	c2.Epoch = c.Epoch
	late2 := &lateTransport{RoundTripper: NewHTTPClient(1).Transport, before: 50 * time.Millisecond, now: c2.now}
	c2.HTTP = &http.Client{Transport: late2}
	called = c2.now()
	rec = c2.Do(t.Context(), Request{Prompt: "x", OutputLen: 2})
	require.True(t, rec.Success, rec.Error)
	assert.Less(t, rec.Start, called+50*time.Millisecond, "vLLM starts the clock before the client takes a connection")
}
