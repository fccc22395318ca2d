package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A rawServer owns its TCP connections: it reads each request and lets
// answer write the raw response to the server's n-th request (from 1);
// answer returning false closes the connection.
type rawServer struct {
	url             string
	conns, requests atomic.Int32
}

func newRawServer(tb testing.TB, answer func(conn net.Conn, n int) bool) *rawServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	s := &rawServer{url: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			mu.Lock()
			open = append(open, conn)
			mu.Unlock()
			wg.Go(func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if _, err := io.Copy(io.Discard, req.Body); err != nil {
						return
					}
					if !answer(conn, int(s.requests.Add(1))) {
						return
					}
				}
			})
		}
	})
	return s
}

// chunked frames body in chunks of the given sizes, in turn.
func chunked(body []byte, sizes ...int) []byte {
	var b bytes.Buffer
	for i := 0; len(body) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(body))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.Bytes()
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"

// TestChunkedDecoding decodes chunked bodies read at every split, from a
// byte a read up: chunk-size lines, extensions, CRLFs and trailers split
// anywhere decode to the same bytes, and broken framing fails clearly.
func TestChunkedDecoding(t *testing.T) {
	sse := replaceAll(readFixture(t, "vllm-0.13-completions.sse"), "\n", "\r\n")
	tests := []struct {
		name, raw, want, err string
		extra                bool
	}{
		{name: "chunks splitting events and CRLFs", raw: string(chunked(sse, 1, 2, 3, 7, 64, 333)), want: string(sse)},
		{name: "extensions", raw: "5;name=\"v\"\r\nhello\r\n6 ; x\r\n world\r\n0;last\r\n\r\n", want: "hello world"},
		{name: "trailers", raw: "5\r\nhello\r\n0\r\nX-Usage: 1\r\nX-Other: 2\r\n\r\n", want: "hello"},
		{name: "bare LF and upper-case hex", raw: "A\nhelloworld\r\n0\n\n", want: "helloworld"},
		{name: "bytes after the end", raw: "5\r\nhello\r\n0\r\n\r\nHTTP/1.1 408 Request Timeout\r\n\r\n", want: "hello", extra: true},
		{name: "bad size", raw: "5\r\nhello\r\nzz\r\n", want: "hello", err: "bad chunk size (byte 'z')"},
		{name: "no size", raw: "\r\nhello\r\n", err: "bad chunk size"},
		{name: "data without CRLF", raw: "5\r\nhelloX\r\n0\r\n\r\n", want: "hello", err: "chunk data not followed by CRLF"},
		{name: "leading zeros", raw: "0000000000000005\r\nhello\r\n00000000000000000\r\n\r\n", want: "hello"},
		{name: "size too large", raw: "10000000000\r\n", err: "hex digits"},
		{name: "size too large after zeros", raw: "0010000000000\r\n", err: "hex digits"},
		{name: "extension too long", raw: "1;" + strings.Repeat("x", maxChunkLine) + "\r\n", err: "chunk-size line too long"},
		{name: "cut short", raw: "5\r\nhel", want: "hel", err: "before the end of the chunked body"},
		{name: "cut before the trailer", raw: "5\r\nhello\r\n", want: "hello", err: "before the end of the chunked body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for step := 1; step <= len(tt.raw); step++ {
				var b h1Body
				_, err := b.start(&chunkedReader{b: []byte(tt.raw), step: step}, respHead{status: 200, chunked: true, length: -1}, nil, 0)
				require.NoError(t, err)
				got, err := io.ReadAll(&b)
				if tt.err == "" {
					require.NoError(t, err, "step %d", step)
					assert.True(t, b.done, "step %d: body not done", step)
				} else {
					require.ErrorContains(t, err, tt.err, "step %d", step)
				}
				require.Equal(t, tt.want, string(got), "step %d", step)
				if step == len(tt.raw) {
					assert.Equal(t, tt.extra, b.extra, "bytes after the body")
				}
			}
		})
	}
}

// TestH1StreamByteByByte: a raw server writes a chunked event stream with
// CRLF line ends one byte a write, its chunks splitting events and CRLFs;
// every token counts, and the connection, read to its end, carries the
// next request.
func TestH1StreamByteByByte(t *testing.T) {
	body := chunked(replaceAll(readFixture(t, "vllm-0.13-completions.sse"), "\n", "\r\n"), 1, 2, 3, 7, 64)
	resp := append([]byte(sseHead+"Transfer-Encoding: chunked\r\n\r\n"), body...)
	srv := newRawServer(t, func(conn net.Conn, _ int) bool {
		_ = conn.(*net.TCPConn).SetNoDelay(true)
		for i := range resp {
			if _, err := conn.Write(resp[i : i+1]); err != nil {
				return false
			}
			if i%16 == 0 {
				time.Sleep(20 * time.Microsecond)
			}
		}
		return true
	})
	c := newClient(BackendOpenAI, srv.url)
	for range 2 {
		rec := c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 16})
		require.True(t, rec.Success, rec.Error)
		assert.Equal(t, completionsText, rec.GeneratedText)
		assert.Equal(t, 8, rec.OutputTokens)
		assert.Len(t, rec.ITL, 7)
		checkTimings(t, rec)
	}
	assert.Equal(t, int32(1), srv.conns.Load(), "the second request reused the connection")
}

// TestH1BodyFramings: each way of ending a body is read whole, and the
// connection is kept only when both sides allow it and the body ended
// where its framing said.
func TestH1BodyFramings(t *testing.T) {
	sse := readFixture(t, "vllm-0.13-completions.sse")
	length := fmt.Sprintf("Content-Length: %d\r\n\r\n", len(sse))
	tests := []struct {
		name   string
		answer string
		close  bool // the server closes after answering
		header map[string]string
		conns  int32
	}{
		{name: "content-length", answer: sseHead + length + string(sse), conns: 1},
		{name: "close-delimited", answer: sseHead + "\r\n" + string(sse), close: true, conns: 2},
		{name: "http/1.0 close-delimited", answer: "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + string(sse), close: true, conns: 2},
		{name: "server says Connection: close", answer: sseHead + "Connection: close\r\n" + length + string(sse), conns: 2},
		{name: "client says Connection: close", answer: sseHead + length + string(sse), header: map[string]string{"Connection": "close"}, conns: 2},
		{name: "100 Continue and 103 first", answer: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + sseHead + length + string(sse), conns: 1},
		{name: "chunked with extensions and trailers", answer: sseHead + "Transfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n" +
			strings.TrimSuffix(strings.Replace(string(chunked(sse, 100)), "64\r\n", "64;ext=1\r\n", 1), "\r\n") + "X-T: 1\r\n\r\n", conns: 1},
		{name: "space before the colon", answer: sseHead + "Transfer-Encoding : chunked\r\nX Y: 1\r\n\r\n" + string(chunked(sse, 100)), conns: 1},
		{name: "server says close in a folded line", answer: sseHead + "Connection: keep-alive,\r\n close\r\n" + length + string(sse), conns: 2},
		{name: "chunked and Content-Length both", answer: sseHead + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n" + string(chunked(sse, 500)), conns: 2},
		{name: "unsolicited bytes after the body", answer: sseHead + length + string(sse) + "HTTP/1.1 408 Request Timeout\r\n\r\n", conns: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRawServer(t, func(conn net.Conn, _ int) bool {
				_, err := io.WriteString(conn, tt.answer)
				return err == nil && !tt.close
			})
			c := newClient(BackendOpenAI, srv.url)
			c.Headers = tt.header
			c.Timeout = 10 * time.Second // a body misframed waits for a close
			for range 2 {
				rec := c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 16})
				require.True(t, rec.Success, rec.Error)
				assert.Equal(t, completionsText, rec.GeneratedText)
				assert.Equal(t, 8, rec.OutputTokens)
			}
			assert.Equal(t, tt.conns, srv.conns.Load(), "connections for two requests")
		})
	}
}

// TestH1BadAnswers: a broken or oversize head, or broken framing, is a
// transport failure that says what was wrong.
func TestH1BadAnswers(t *testing.T) {
	tests := []struct{ name, answer, err string }{
		{"oversize header block", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("x", 70<<10) + "\r\n\r\n", "header block over 65536 bytes"},
		{"endless 1xx", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 6) + sseHead + "Content-Length: 0\r\n\r\n", "more than 5 informational (1xx) answers"},
		{"malformed status line", "HTTP/1.1 OK\r\n\r\n", "malformed status line"},
		{"not HTTP", "SSH-2.0-OpenSSH_9.6\r\n\r\n", "malformed status line"},
		{"bad Content-Length", sseHead + "Content-Length: 12x\r\n\r\n", `bad Content-Length "12x"`},
		{"signed Content-Length", sseHead + "Content-Length: +12\r\n\r\n", `bad Content-Length "+12"`},
		{"tab in a field name", sseHead + "X\tY: 1\r\n\r\n", "malformed header line"},
		{"field line without a colon", sseHead + "Content-Length 12\r\n\r\n", "malformed header line"},
		{"unsupported transfer encoding", sseHead + "Transfer-Encoding: gzip\r\n\r\n", `unsupported transfer encoding "gzip"`},
		{"compressed and chunked", sseHead + "Transfer-Encoding: gzip, chunked\r\n\r\n" + string(chunked([]byte("\x1f\x8b\x08\x00"), 4)), `unsupported transfer encoding "gzip, chunked"`},
		{"bad chunk size", sseHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"},
		{"closed mid-head", "HTTP/1.1 200 OK\r\nContent-Ty", "in the middle of the response head"},
		{"closed before answering", "", "server closed the connection before answering"},
		{"closed mid-body", sseHead + "Content-Length: 100000\r\n\r\ndata: {}\n\n", "bytes before the end of the body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRawServer(t, func(conn net.Conn, _ int) bool {
				_, _ = io.WriteString(conn, tt.answer)
				return false
			})
			rec := newClient(BackendOpenAI, srv.url).Do(t.Context(), Request{Prompt: "hi", OutputLen: 16})
			assert.Equal(t, metrics.FailureTransport, rec.Failure, rec.Error)
			assert.Contains(t, rec.Error, tt.err)
		})
	}
}

// TestH1IdleConnectionClosedByServer: a pooled connection the server
// closed while it was idle is not used; the request goes out once, on a
// new connection.
func TestH1IdleConnectionClosedByServer(t *testing.T) {
	sse := readFixture(t, "vllm-0.13-completions.sse")
	srv := newRawServer(t, func(conn net.Conn, _ int) bool {
		_, _ = fmt.Fprintf(conn, sseHead+"Content-Length: %d\r\n\r\n%s", len(sse), sse)
		return false // kept alive by its header, closed after all
	})
	c := newClient(BackendOpenAI, srv.url)
	rec := c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 16})
	require.True(t, rec.Success, rec.Error)
	require.Len(t, c.h1.idle.conns, 1, "the connection was pooled")
	pooled := c.h1.idle.conns[0]
	require.Eventually(t, func() bool { return !open(pooled) }, 5*time.Second, time.Millisecond, "the server's close arrives")
	rec = c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 16})
	require.True(t, rec.Success, rec.Error)
	assert.Equal(t, int32(2), srv.requests.Load())
	assert.Equal(t, int32(2), srv.conns.Load())
}

// A brokenConn is a pooled connection whose writes fail after written
// bytes.
type brokenConn struct {
	net.Conn
	written int
	closed  bool
}

func (b *brokenConn) Write(p []byte) (int, error) {
	return min(b.written, len(p)), errors.New("write: broken pipe")
}
func (b *brokenConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (b *brokenConn) Close() error                     { b.closed = true; return nil }
func (b *brokenConn) SetDeadline(time.Time) error      { return nil }
func (b *brokenConn) SetReadDeadline(time.Time) error  { return nil }
func (b *brokenConn) SetWriteDeadline(time.Time) error { return nil }

// TestH1SendsAPostOnce: a request is sent again, on a new connection, only
// when not a byte of it went out on the reused one; once any byte did
// (the server may have it), the request fails and is not repeated.
func TestH1SendsAPostOnce(t *testing.T) {
	sse := readFixture(t, "vllm-0.13-completions.sse")
	answer := func(conn net.Conn) bool {
		_, err := fmt.Fprintf(conn, sseHead+"Content-Length: %d\r\n\r\n%s", len(sse), sse)
		return err == nil
	}
	for _, tt := range []struct {
		written  int
		success  bool
		requests int32
	}{{0, true, 1}, {10, false, 0}} {
		t.Run(fmt.Sprintf("written=%d", tt.written), func(t *testing.T) {
			srv := newRawServer(t, func(conn net.Conn, _ int) bool { return answer(conn) })
			c := newClient(BackendOpenAI, srv.url)
			c.init()
			broken := &brokenConn{written: tt.written}
			c.h1.put(broken)
			rec := c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 16})
			assert.Equal(t, tt.success, rec.Success, rec.Error)
			assert.True(t, broken.closed, "the broken connection was closed")
			assert.Equal(t, tt.requests, srv.requests.Load())
			if !tt.success {
				assert.Equal(t, metrics.FailureTransport, rec.Failure)
				assert.Contains(t, rec.Error, "broken pipe")
			}
		})
	}
	t.Run("written, then closed unanswered", func(t *testing.T) {
		srv := newRawServer(t, func(conn net.Conn, n int) bool { return n == 1 && answer(conn) })
		c := newClient(BackendOpenAI, srv.url)
		rec := c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 16})
		require.True(t, rec.Success, rec.Error)
		rec = c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 16})
		assert.Equal(t, metrics.FailureTransport, rec.Failure)
		assert.Contains(t, rec.Error, "server closed the connection before answering")
		time.Sleep(20 * time.Millisecond) // room for a wrong second send to arrive
		assert.Equal(t, int32(2), srv.requests.Load(), "the failed request was sent once")
		assert.Equal(t, int32(1), srv.conns.Load())
	})
}

// TestH1CancelAndTimeout: cancellation and the request timeout end a
// request waiting for its head or in the middle of its stream, keep what
// arrived, and close the connection instead of pooling it.
func TestH1CancelAndTimeout(t *testing.T) {
	first := readFixture(t, "vllm-0.13-completions.sse")
	first = first[:bytes.Index(first, []byte("\n\n"))+2]
	for _, tt := range []struct {
		name     string
		headless bool
		cancel   bool
		want     metrics.FailureKind
		prefix   string
	}{
		{"cancel mid-stream", false, true, metrics.FailureCanceled, "canceled: context canceled"},
		{"cancel before the head", true, true, metrics.FailureCanceled, "canceled: context canceled"},
		{"timeout mid-stream", false, false, metrics.FailureTimeout, "timeout after 50ms: "},
		{"timeout before the head", true, false, metrics.FailureTimeout, "timeout after 50ms: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gone := make(chan struct{})
			srv := newRawServer(t, func(conn net.Conn, _ int) bool {
				if !tt.headless {
					_, _ = fmt.Fprintf(conn, sseHead+"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(first), first)
				}
				_, _ = conn.Read(make([]byte, 1)) // until the client closes
				close(gone)
				return false
			})
			c := newClient(BackendOpenAI, srv.url)
			ctx := t.Context()
			if tt.cancel {
				c.Timeout = time.Minute
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(50*time.Millisecond, cancel)
			} else {
				c.Timeout = 50 * time.Millisecond
			}
			rec := c.Do(ctx, Request{Prompt: "hi", OutputLen: 16})
			assert.Equal(t, tt.want, rec.Failure, rec.Error)
			assert.True(t, strings.HasPrefix(rec.Error, tt.prefix), "error %q, want prefix %q", rec.Error, tt.prefix)
			if !tt.headless {
				assert.Equal(t, " The", rec.GeneratedText, "the chunk before the end is kept")
				assert.Positive(t, rec.TTFT)
			}
			<-gone
			assert.Empty(t, c.h1.idle.conns, "the connection was closed, not pooled")
		})
	}
}

// Over a warm connection the own transport times a request from its
// write and its first chunk from its arrival, however late the caller's
// goroutine ran; over a plain one it keeps vLLM's instants.
func TestH1TimesTheWire(t *testing.T) {
	srv := newRawServer(t, func(conn net.Conn, _ int) bool {
		_, _ = io.WriteString(conn, sseHead+"Transfer-Encoding: chunked\r\n\r\n")
		for _, ev := range []string{`data: {"choices":[{"text":"a"}]}` + "\n\n", `data: {"choices":[{"text":"b"}]}` + "\n\ndata: [DONE]\n\n"} {
			if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(ev), ev); err != nil {
				return false
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, err := io.WriteString(conn, "0\r\n\r\n")
		return err == nil
	})
	w := NewWarmer()
	defer w.Close()
	_, err := w.Warm(t.Context(), srv.url, 1)
	require.NoError(t, err)
	for _, warm := range []bool{true, false} {
		c := newClient(BackendOpenAI, srv.url)
		if warm {
			c.Warmer = w
		}
		c.Epoch = time.Now()
		c.init()
		var lates []time.Duration
		c.h1.late = func() {
			time.Sleep(50 * time.Millisecond)
			lates = append(lates, c.now())
		}
		called := c.now()
		rec := c.Do(t.Context(), Request{Prompt: "x", OutputLen: 2})
		require.True(t, rec.Success, rec.Error)
		checkTimings(t, rec)
		assert.Len(t, rec.ITL, 1)
		if !warm {
			assert.Less(t, rec.Start, called+50*time.Millisecond, "vLLM starts the clock before the client takes a connection")
			continue
		}
		assert.GreaterOrEqual(t, rec.Start, called+50*time.Millisecond, "the start is the write, after the client's delay")
		require.Len(t, lates, 2)
		assert.LessOrEqual(t, rec.Start+rec.TTFT, lates[1], "the first chunk is dated by its arrival, before the client read it")
	}
}

// A Client with a Warmer takes the warm connections before dialling and
// pools them after: two rounds of concurrent requests dial none.
func TestH1WarmerFeedsThePool(t *testing.T) {
	s := newConnServer(t, 20*time.Millisecond)
	w := NewWarmer()
	defer w.Close()
	got, err := w.Warm(context.Background(), s.URL, 8)
	require.NoError(t, err)
	require.Equal(t, 8, got)
	c := &Client{Backend: BackendOpenAIEmbeddings, URL: s.URL + "/v1/embeddings", Model: "m", Warmer: w}
	for range 2 {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { c.Do(context.Background(), Request{Prompt: "x"}) })
		}
		wg.Wait()
	}
	assert.Equal(t, int32(16), s.requests.Load())
	assert.Equal(t, int32(8), s.accepted.Load(), "the requests dialled no connection of their own")
	assert.Len(t, c.h1.idle.conns, 8)
}

// TestH1Fallback: https, credentials in the URL or a caller's own client
// keep net/http. (So does a proxy, but http.ProxyFromEnvironment reads
// the environment once a process and never proxies loopback.)
func TestH1Fallback(t *testing.T) {
	for _, tt := range []struct {
		url  string
		own  bool
		http *http.Client
	}{
		{"http://127.0.0.1:8000/v1/completions", true, nil},
		{"https://127.0.0.1:8000/v1/completions", false, nil},
		{"http://user:pw@127.0.0.1:8000/v1/completions", false, nil},
		{"http://127.0.0.1:8000/v1/completions", false, http.DefaultClient},
	} {
		c := &Client{Backend: BackendOpenAI, URL: tt.url, Model: "m", HTTP: tt.http}
		c.init()
		assert.Equal(t, tt.own, c.h1 != nil, tt.url)
		assert.Equal(t, tt.own, c.HTTP == nil, tt.url)
	}
}

// TestRequestHead: the request goes out as net/http would write it, and
// a header field net/http refuses fails the request before it is sent.
func TestRequestHead(t *testing.T) {
	c := newClient(BackendOpenAI, "http://h:8000")
	c.APIKey = "k"
	c.Headers = map[string]string{"X-Tenant": "a"}
	p := c.Prepare(Request{Prompt: "p", RequestID: "r1"})
	require.NoError(t, p.err)
	head, body, _ := strings.Cut(string(p.wire), "\r\n\r\n")
	assert.Equal(t, "POST /v1/completions HTTP/1.1\r\nHost: h:8000\r\nUser-Agent: Go-http-client/1.1\r\n"+
		fmt.Sprintf("Content-Length: %d\r\n", len(body))+
		"Authorization: Bearer k\r\nContent-Type: application/json\r\nX-Request-Id: r1\r\nX-Tenant: a", head)
	for _, h := range []map[string]string{{"X-Bad\r\nInjected": "v"}, {"X-Bad": "v\r\nInjected: 1"}} {
		c := newClient(BackendOpenAI, "http://h:8000")
		c.Headers = h
		rec := c.Do(t.Context(), Request{Prompt: "p"})
		assert.Equal(t, metrics.FailureTransport, rec.Failure)
		assert.Contains(t, rec.Error, "invalid header field")
	}
}

// DoPrepared lets go of the request's bytes once written, so that a long
// prompt is not held for the whole stream.
func TestH1DropsTheWrittenRequest(t *testing.T) {
	srv := newReplay(t, http.StatusOK, readFixture(t, "vllm-0.13-completions.sse"), 0)
	c := newClient(BackendOpenAI, srv.URL)
	p := c.Prepare(Request{Prompt: strings.Repeat("long prompt ", 1000), OutputLen: 16})
	require.NotEmpty(t, p.wire)
	var rec metrics.Record
	c.DoPrepared(t.Context(), &p, &rec)
	require.True(t, rec.Success, rec.Error)
	assert.Nil(t, p.wire)
}

// An open stream costs one goroutine, the caller's: with n streams open
// against a raw server (one goroutine a connection), the process holds
// about 2n goroutines more than before; net/http's read and write loops
// would make it 4n.
func TestH1OneGoroutineAStream(t *testing.T) {
	const n = 50
	release := make(chan struct{})
	var open sync.WaitGroup
	open.Add(n)
	srv := newRawServer(t, func(conn net.Conn, _ int) bool {
		_, _ = fmt.Fprintf(conn, sseHead+"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", 5, "data:")
		open.Done()
		<-release
		return false
	})
	c := newClient(BackendOpenAI, srv.url)
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 16}) })
	}
	open.Wait()
	time.Sleep(20 * time.Millisecond) // every stream waits in its read
	during := runtime.NumGoroutine() - before
	close(release)
	wg.Wait()
	assert.LessOrEqual(t, during, 2*n+5, "goroutines for %d open streams (client and server)", n)
}
