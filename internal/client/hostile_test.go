package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/hostile"
	"github.com/servegate/servegate/internal/metrics"
)

// hostileRequest is the request every hostile case expects.
var hostileRequest = client.Request{Prompt: "Hello", PromptLen: 2, OutputLen: hostile.MaxTokens}

// TestHostileServers drives the real client over loopback HTTP against
// every hostile server, with the case's backend, and checks the record it
// expects: each bad stream is a counted failure of its kind, never a
// crash or a pass.
func TestHostileServers(t *testing.T) {
	for _, hc := range hostile.Cases() {
		t.Run(hc.Name, func(t *testing.T) {
			t.Parallel()
			base := hc.Start(t)
			backend := hc.Backend
			if backend == "" {
				backend = client.BackendOpenAI
			}
			c := &client.Client{Backend: backend, URL: base + client.DefaultEndpoint(backend), Model: "m", Timeout: time.Minute}
			rec := c.Do(context.Background(), hostileRequest)
			checkWant(t, rec, hc.Want)
		})
	}
}

func checkWant(tb testing.TB, rec metrics.Record, w hostile.Want) {
	tb.Helper()
	if rec.Success != w.Success || rec.Failure != w.Failure {
		tb.Fatalf("success %v failure %q (%s), want %v %q", rec.Success, rec.Failure, rec.Error, w.Success, w.Failure)
	}
	if !strings.Contains(rec.Error, w.ErrorContains) {
		tb.Errorf("error %q, want it to contain %q", rec.Error, w.ErrorContains)
	}
	if w.OutputTokens >= 0 && rec.OutputTokens != w.OutputTokens {
		tb.Errorf("output tokens %d, want %d", rec.OutputTokens, w.OutputTokens)
	}
	chunks := 0
	if rec.TTFT > 0 {
		chunks = 1 + len(rec.ITL)
	}
	if w.Chunks >= 0 && chunks != w.Chunks {
		tb.Errorf("chunks %d, want %d", chunks, w.Chunks)
	}
	if w.Success && rec.GeneratedText != w.Text {
		tb.Errorf("text %q, want %q", rec.GeneratedText, w.Text)
	}
	if max := hostile.MaxTokens + client.OutputSlack; chunks > max {
		tb.Errorf("%d output chunks timed, more than max_tokens + slack (%d)", chunks, max)
	}
}

// BenchmarkHostileRSS sends one request to a hostile server that sends
// two 512 MiB data lines (giant) or never stops (endless), and reports
// the process's peak RSS. Peak RSS only grows, so run one case per
// process:
//
//	go test -run '^$' -bench 'HostileRSS/giant' -benchtime 1x ./internal/client
func BenchmarkHostileRSS(b *testing.B) {
	for _, hc := range []hostile.Case{hostile.GiantLine(512<<20, 2), hostile.Endless()} {
		b.Run(strings.SplitN(hc.Name, "-", 2)[0], func(b *testing.B) {
			base := hc.Start(b)
			c := &client.Client{Backend: client.BackendOpenAI, URL: base + "/v1/completions", Model: "m", Timeout: 15 * time.Second}
			for b.Loop() {
				rec := c.Do(context.Background(), hostileRequest)
				if rec.Success {
					b.Fatalf("hostile server %s: request succeeded", hc.Name)
				}
			}
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
				b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
			}
		})
	}
}

// TestMaxLineBytes: the line cap can be raised past a long line, and it
// bounds a pooling body at PoolingBodyFactor caps.
func TestMaxLineBytes(t *testing.T) {
	base := hostile.GiantLine(4<<20, 1).Start(t)
	c := &client.Client{Backend: client.BackendOpenAI, URL: base + "/v1/completions", Model: "m", MaxLineBytes: 5 << 20}
	rec := c.Do(context.Background(), hostileRequest)
	if !rec.Success || len(rec.GeneratedText) != 4<<20 {
		t.Errorf("raised cap: success %v (%s), %d text bytes, want 4 MiB", rec.Success, rec.Error, len(rec.GeneratedText))
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[{"embedding":[`+strings.Repeat("0.5,", 20_000)+`0.5]}],"usage":{"prompt_tokens":3}}`)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		limit int
		want  metrics.FailureKind
	}{{1 << 10, metrics.FailureLineTooLong}, {2 << 10, metrics.FailureNone}} {
		c := &client.Client{Backend: client.BackendOpenAIEmbeddings, URL: srv.URL + "/v1/embeddings", Model: "m", MaxLineBytes: tt.limit}
		rec := c.Do(context.Background(), client.Request{Prompt: "x"})
		if rec.Failure != tt.want {
			t.Errorf("pooling body of 80 kB with line cap %d: failure %q (%s), want %q", tt.limit, rec.Failure, rec.Error, tt.want)
		}
	}
}
