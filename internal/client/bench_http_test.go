package client

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/childserver"
	"github.com/servegate/servegate/internal/cputime"
)

const (
	benchChunks  = 512
	benchStreams = 32
)

// sseHandler writes a pre-rendered stream as fast as it can: one flushed
// write per event (a chunk per TCP segment, as a server streaming tokens
// sends them) or, without perChunk, the whole stream in one write.
func sseHandler(body []byte, perChunk bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if !perChunk {
			_, _ = w.Write(body)
			return
		}
		f := w.(http.Flusher)
		rest := body
		for len(rest) > 0 {
			i := bytes.Index(rest, []byte("\n\n")) + 2
			_, _ = w.Write(rest[:i])
			f.Flush()
			rest = rest[i:]
		}
	}
}

// TestSSEBenchServer is not a test: run by BenchmarkIngestHTTP in a child
// process, it serves the benchmark stream on loopback (mode "chunk" or
// "bulk").
func TestSSEBenchServer(t *testing.T) {
	mode := childserver.Mode()
	if mode == "" {
		t.Skip("helper process for BenchmarkIngestHTTP")
	}
	childserver.Serve(t, sseHandler(renderStream(benchChunks), mode == "chunk"))
}

// startServer returns the base URL of an SSE server for the benchmark: an
// httptest server in this process, or the test binary re-run as a child
// process so that this process's CPU and allocations are the client's
// alone.
func startServer(b *testing.B, perChunk, child bool) string {
	b.Helper()
	if !child {
		srv := httptest.NewServer(sseHandler(renderStream(benchChunks), perChunk))
		b.Cleanup(srv.Close)
		return srv.URL
	}
	mode := "bulk"
	if perChunk {
		mode = "chunk"
	}
	return childserver.Start(b, "TestSSEBenchServer", mode)
}

// BenchmarkIngestHTTP runs 32 concurrent streams of 512 pre-rendered vLLM
// chunks over loopback HTTP and reports chunks per second and, per chunk,
// the CPU, bytes and allocations of this process. With server=inproc the
// server shares the process (its cost is in the figures); with
// server=child it runs in a child process, so the figures are the client's
// alone, HTTP stack included. flush=chunk writes one event per TCP
// segment; flush=none writes each stream at once. transport=own is the
// package's own HTTP/1.1 transport, transport=net-http net/http's.
func BenchmarkIngestHTTP(b *testing.B) {
	for _, child := range []bool{false, true} {
		for _, perChunk := range []bool{true, false} {
			for _, own := range []bool{true, false} {
				name := fmt.Sprintf("server=%s/flush=%s/transport=%s", map[bool]string{false: "inproc", true: "child"}[child],
					map[bool]string{false: "none", true: "chunk"}[perChunk], map[bool]string{true: "own", false: "net-http"}[own])
				b.Run(name, func(b *testing.B) { benchIngestHTTP(b, child, perChunk, own) })
			}
		}
	}
}

// benchIngestHTTP is one case of BenchmarkIngestHTTP.
func benchIngestHTTP(b *testing.B, child, perChunk, own bool) {
	c := newClient(BackendOpenAI, startServer(b, perChunk, child))
	if !own {
		c.HTTP = NewHTTPClient(benchStreams)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	cpu0 := cputime.Process()
	total := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for range benchStreams {
			wg.Go(func() {
				rec := c.Do(context.Background(), Request{Prompt: "hi", OutputLen: benchChunks})
				if !rec.Success || rec.OutputTokens != benchChunks {
					b.Errorf("stream failed: %s", rec.Error)
				}
			})
		}
		wg.Wait()
		total += benchStreams * benchChunks
	}
	el := time.Since(start)
	cpu := cputime.Process() - cpu0
	runtime.ReadMemStats(&after)
	per := float64(total)
	b.ReportMetric(per/el.Seconds(), "chunks/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-ns/chunk")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/per, "B/chunk")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/chunk")
}
