package engine

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/dataset"
)

// closingServer is a loopback server that reads a request's head and
// 4 KiB of its body, then writes answer (nothing when it is "") and closes
// the connection with the rest of the body unread, as a server does that
// refuses a request too big: the kernel resets the connection while the
// client is still writing.
func closingServer(tb testing.TB, answer string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				buf := make([]byte, 4096)
				if _, err := req.Body.Read(buf); err != nil {
					return
				}
				if answer != "" {
					conn.Write([]byte(answer))
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestTooBigFirstRequestFailsAtOnce: a first request that the server
// refuses (or drops) while its body is still being sent fails the ready
// wait at once, with the server's answer when it gave one, never by
// retrying until the ready timeout.
func TestTooBigFirstRequestFailsAtOnce(t *testing.T) {
	const body = `{"error":{"message":"This model's maximum context length is 131072 tokens.","type":"BadRequestError","code":400}}`
	for _, tc := range []struct {
		name, answer string
		want         []string
	}{
		{"400 then close", "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body,
			[]string{"initial test request failed", "HTTP 400", "maximum context length"}},
		{"close without an answer", "",
			[]string{"initial test request failed", "the server closed the connection while the request was being sent", "bytes"}},
	} {
		for _, nethttp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/net-http=%v", tc.name, nethttp), func(t *testing.T) {
				prompt := strings.Repeat("hello ", 8<<20) // 48 MiB: far past the socket buffers
				cfg := Config{Model: "m", BaseURL: closingServer(t, tc.answer), ReadyTimeout: 10 * time.Minute, ReadyInterval: 20 * time.Millisecond}
				if nethttp {
					cfg.HTTPClient = client.NewHTTPClient(1)
				}
				start := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				_, err := Run(ctx, cfg, []dataset.Sample{{Prompt: prompt, PromptLen: 8 << 20, OutputLen: 8}})
				took := time.Since(start)
				if err == nil {
					t.Fatal("no error")
				}
				want := tc.want
				if nethttp && tc.answer != "" && strings.Contains(err.Error(), "closed the connection while") {
					// net/http's transport reads no answer once a write
					// failed: it races, and the cut is then all it reports.
					want = []string{"initial test request failed", "bytes sent"}
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v, want %q in it", err, w)
					}
				}
				if took > 10*time.Second || ctx.Err() != nil {
					t.Errorf("took %v (ctx %v): want a failure at once", took, ctx.Err())
				}
			})
		}
	}
}
