package client

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	benchChunks  = 512
	benchStreams = 32
	// serverEnv makes the test binary act as the benchmark's SSE server.
	serverEnv = "SERVEGATE_SSE_BENCH_SERVER"
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
// process (with serverEnv set), it serves the benchmark stream on loopback,
// prints its address and exits when its stdin closes.
func TestSSEBenchServer(t *testing.T) {
	mode := os.Getenv(serverEnv)
	if mode == "" {
		t.Skip("helper process for BenchmarkIngestHTTP")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sseHandler(renderStream(benchChunks), mode == "chunk")}
	go func() { _ = srv.Serve(l) }()
	fmt.Println("ADDR", l.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = srv.Close()
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestSSEBenchServer$", "-test.v")
	cmd.Env = append(os.Environ(), serverEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return "http://" + addr
		}
	}
	b.Fatal("helper server printed no address")
	return ""
}

// BenchmarkIngestHTTP runs 32 concurrent streams of 512 pre-rendered vLLM
// chunks over loopback HTTP and reports chunks per second and, per chunk,
// the CPU, bytes and allocations of this process. With server=inproc the
// server shares the process (its cost is in the figures); with
// server=child it runs in a child process, so the figures are the client's
// alone, HTTP stack included. flush=chunk writes one event per TCP
// segment; flush=none writes each stream at once.
func BenchmarkIngestHTTP(b *testing.B) {
	for _, child := range []bool{false, true} {
		for _, perChunk := range []bool{true, false} {
			name := fmt.Sprintf("server=%s/flush=%s", map[bool]string{false: "inproc", true: "child"}[child], map[bool]string{false: "none", true: "chunk"}[perChunk])
			b.Run(name, func(b *testing.B) {
				c := newClient(BackendOpenAI, startServer(b, perChunk, child))
				c.HTTP = NewHTTPClient(benchStreams)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				cpu0 := cpuTime()
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
				cpu := cpuTime() - cpu0
				runtime.ReadMemStats(&after)
				per := float64(total)
				b.ReportMetric(per/el.Seconds(), "chunks/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-ns/chunk")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/per, "B/chunk")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/chunk")
			})
		}
	}
}
