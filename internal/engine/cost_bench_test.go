package engine

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/childserver"
	"github.com/servegate/servegate/internal/cputime"
	"github.com/servegate/servegate/internal/sim"
)

// BenchmarkChunkCPU measures the load generator's own CPU per streamed
// chunk. The simulator runs in a child process, instant profile, one token
// per stream every 2 ms. The load is 256 requests of 512 output tokens,
// 64 in flight, as in the peer comparison with the Rust and Python
// clients. cpu-ns/chunk is the whole run's CPU over its chunks: requests,
// HTTP, SSE parsing, records. net-cpu-ns/chunk subtracts the CPU of the
// same requests with one output token. It is what each further chunk
// costs. Neither counts the tokenizer or the dataset; tools/peers measures
// start-up.
//
// Each iteration also runs BenchmarkChunkFloor's minimal reader on the
// same streams, interleaved. It reports floor-net-cpu-ns/chunk and
// net-vs-floor, our net cost over the floor's. The goal is net-vs-floor
// <= 1.10.
//
//	go test -run '^$' -bench '^BenchmarkChunkCPU$' -benchtime 3x ./internal/engine
func BenchmarkChunkCPU(b *testing.B) {
	url := childserver.Start(b, "TestSimServer", "cpu")
	run := func(outLen int) (time.Duration, int) {
		s := samples(chunkRequests)
		for i := range s {
			s[i].OutputLen = outLen
		}
		cfg := Config{BaseURL: url, Backend: "openai", Model: "servegate/sim-instant", MaxConcurrency: chunkStreams, IgnoreEOS: true}
		cpu0 := cputime.Process()
		res, err := Run(b.Context(), cfg, s)
		cpu := cputime.Process() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		return cpu, countChunks(b, res, outLen)
	}
	var whole, short, floor, floorShort time.Duration
	var chunks, shortChunks, floorChunks, floorShortChunks int
	for b.Loop() {
		cpu, c := run(chunkTokens)
		whole += cpu
		chunks += c
		cpu, c = run(1)
		short += cpu
		shortChunks += c
		cpu, c = floorRun(b, url, chunkTokens)
		floor += cpu
		floorChunks += c
		cpu, c = floorRun(b, url, 1)
		floorShort += cpu
		floorShortChunks += c
	}
	net := float64((whole - short).Nanoseconds()) / float64(chunks-shortChunks)
	floorNet := float64((floor - floorShort).Nanoseconds()) / float64(floorChunks-floorShortChunks)
	b.ReportMetric(float64(whole.Nanoseconds())/float64(chunks), "cpu-ns/chunk")
	b.ReportMetric(net, "net-cpu-ns/chunk")
	b.ReportMetric(floorNet, "floor-net-cpu-ns/chunk")
	b.ReportMetric(net/floorNet, "net-vs-floor")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkOpenStreams measures the load generator's memory per open
// stream. N streams start at once against the simulator in a child
// process. Each gets 64 tokens, one every 25 ms, so all are open together.
// The benchmark samples this process's resident set every 5 ms.
// KB/stream is the peak resident set less the one before the run, over N.
// peak-rss-MB is the peak. The goal is 15 KB a stream, and 200 MB for a
// whole servegate process at 5000 streams. Run one size per process
// (-bench 'OpenStreams/streams=5000$'): the next size reuses memory a size
// freed.
//
//	go test -run '^$' -bench '^BenchmarkOpenStreams$/streams=5000$' -benchtime 1x ./internal/engine
func BenchmarkOpenStreams(b *testing.B) {
	url := childserver.Start(b, "TestSimServer", "open")
	for _, n := range []int{1000, 5000, 10000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			var perStream, peakMB float64
			for b.Loop() {
				s := samples(n)
				for i := range s {
					s[i].OutputLen = 64
				}
				runtime.GC()
				debug.FreeOSMemory()
				before := residentKB(b)
				var peak atomic.Int64
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					tick := time.NewTicker(5 * time.Millisecond)
					defer tick.Stop()
					for {
						peak.Store(max(peak.Load(), residentKB(b)))
						select {
						case <-stop:
							return
						case <-tick.C:
						}
					}
				}()
				cfg := Config{BaseURL: url, Backend: "openai", Model: "servegate/sim-instant", IgnoreEOS: true}
				res, err := Run(b.Context(), cfg, s)
				close(stop)
				<-done
				if err != nil {
					b.Fatal(err)
				}
				countChunks(b, res, 64)
				perStream = float64(peak.Load()-before) / float64(n)
				peakMB = float64(peak.Load()) / 1024
			}
			b.ReportMetric(perStream, "KB/stream")
			b.ReportMetric(peakMB, "peak-rss-MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// countChunks checks that every request succeeded with outLen tokens and
// returns the output chunks the records hold.
func countChunks(b *testing.B, res *Result, outLen int) int {
	b.Helper()
	chunks := 0
	for _, r := range res.Records {
		if !r.Success || r.OutputTokens != outLen {
			b.Fatalf("request %s: success %t, %d tokens: %s", r.RequestID, r.Success, r.OutputTokens, r.Error)
		}
		chunks += len(r.ITL) + 1
	}
	return chunks
}

// residentKB is this process's resident set in KiB (VmRSS).
func residentKB(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status: ", err)
	}
	_, rest, _ := bytes.Cut(b, []byte("VmRSS:"))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("kB")))), 10, 64)
	if err != nil {
		tb.Fatalf("VmRSS: %v", err)
	}
	return kb
}

// TestSimServer is not a test: run in a child process by
// BenchmarkChunkCPU ("cpu": a token every 2 ms), BenchmarkOpenStreams
// ("open": every 25 ms, 20,000 sequences a step), BenchmarkTTFTError
// ("ttft": every 2 ms, 1024 sequences a step) and BenchmarkSessions
// ("sessions": every 5 ms, 20,000 sequences a step), it serves the simulator
// (instant profile) on loopback, stamping each request's receipt at the
// socket as `servegate sim` does.
func TestSimServer(t *testing.T) {
	set := map[string]map[string]string{
		"cpu":  {"step_fixed_ms": "2"},
		"open": {"step_fixed_ms": "25", "max_num_seqs": "20000"},
		"ttft": {"step_fixed_ms": "2"},
		// BenchmarkSessions: 10,000 first turns at once.
		"sessions": {"step_fixed_ms": "5", "max_num_seqs": "20000"},
	}[childserver.Mode()]
	if set == nil {
		t.Skip("helper process for BenchmarkChunkCPU, BenchmarkOpenStreams, BenchmarkTTFTError and BenchmarkSessions")
	}
	srv, err := sim.New(sim.Config{Profile: "instant", Set: set})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	childserver.ServeServer(t, &http.Server{Handler: srv, ConnContext: sim.ConnContext}, sim.StampListener)
}
