package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/childserver"
	"github.com/servegate/servegate/internal/cputime"
)

// The chunk-cost shape shared by BenchmarkChunkCPU and BenchmarkChunkFloor:
// 256 requests of 512 output tokens, 64 in flight, one token a chunk.
const chunkRequests, chunkTokens, chunkStreams = 256, 512, 64

// BenchmarkChunkFloor measures what the cheapest reader of the same
// streams costs per chunk. BenchmarkChunkCPU is judged against this floor:
// ours should be within 10% of it on the same run. It sends
// BenchmarkChunkCPU's requests to the same child simulator. Each stream
// has a goroutine on a kept-alive loopback TCP connection. It reads each
// response with a plain 4 KiB read as data arrives. It takes one clock
// reading per read and counts SSE events. There is no HTTP client, no
// JSON and no record. Its cpu-ns/chunk and net-cpu-ns/chunk are computed
// as BenchmarkChunkCPU's are, so the two divide. BenchmarkChunkCPU
// reports the ratio of its own run to interleaved floor runs as
// net-vs-floor.
//
//	go test -run '^$' -bench '^BenchmarkChunk(CPU|Floor)$' -benchtime 3x ./internal/engine
func BenchmarkChunkFloor(b *testing.B) {
	url := childserver.Start(b, "TestSimServer", "cpu")
	var whole, short time.Duration
	var chunks, shortChunks int
	for b.Loop() {
		cpu, c := floorRun(b, url, chunkTokens)
		whole += cpu
		chunks += c
		cpu, c = floorRun(b, url, 1)
		short += cpu
		shortChunks += c
	}
	b.ReportMetric(float64(whole.Nanoseconds())/float64(chunks), "cpu-ns/chunk")
	b.ReportMetric(float64((whole-short).Nanoseconds())/float64(chunks-shortChunks), "net-cpu-ns/chunk")
	b.ReportMetric(0, "ns/op")
}

// floorRun sends chunkRequests requests of outLen tokens through
// chunkStreams minimal readers and returns the process CPU they took and
// the token chunks read.
func floorRun(b *testing.B, baseURL string, outLen int) (time.Duration, int) {
	b.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([][]byte, chunkRequests)
	for i, s := range samples(chunkRequests) {
		body, err := json.Marshal(map[string]any{
			"model": "servegate/sim-instant", "prompt": s.Prompt, "repetition_penalty": 1.0,
			"max_tokens": outLen, "logprobs": nil, "stream": true,
			"stream_options": map[string]any{"include_usage": true}, "ignore_eos": true,
		})
		if err != nil {
			b.Fatal(err)
		}
		reqs[i] = fmt.Appendf(nil, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", u.Host, len(body), body)
	}
	jobs := make(chan []byte, len(reqs))
	for _, r := range reqs {
		jobs <- r
	}
	close(jobs)
	var (
		mu           sync.Mutex
		events, done int
		errs         []error
		wg           sync.WaitGroup
	)
	cpu0 := cputime.Process()
	for range chunkStreams {
		wg.Go(func() {
			n, d, err := floorReader(b.Context(), u.Host, jobs)
			mu.Lock()
			defer mu.Unlock()
			events += n
			done += d
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	cpu := cputime.Process() - cpu0
	if len(errs) > 0 {
		b.Fatalf("floor reader: %v (and %d more)", errs[0], len(errs)-1)
	}
	// Each stream ends with a usage event and [DONE]; the events before
	// are its token chunks (the simulator merges tokens into one chunk
	// when a reader falls behind, as vLLM does, so there can be fewer
	// than outLen).
	if done != chunkRequests || events < 3*chunkRequests {
		b.Fatalf("floor reader: %d streams of %d ended, %d SSE events", done, chunkRequests, events)
	}
	return cpu, events - 2*chunkRequests
}

// floorReader is one stream's minimal reader: on one connection, it writes
// each request and reads the response in 4 KiB reads until the chunked
// body's last chunk, counting "data:" events. It returns the events read
// and the streams that ended with [DONE].
func floorReader(ctx context.Context, addr string, jobs <-chan []byte) (events, done int, err error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	buf := make([]byte, 4096)
	tail := make([]byte, 0, 2*len(buf))
	var last time.Time // kept so the clock reading is not optimized away
	for req := range jobs {
		if _, err := conn.Write(req); err != nil {
			return events, done, err
		}
		tail = tail[:0]
		for {
			n, err := conn.Read(buf)
			last = time.Now() // the one clock reading any client takes per read
			if n > 0 {
				tail = append(tail, buf[:n]...)
				// Count whole events; keep the bytes after the last one.
				i := bytes.LastIndex(tail, []byte("\n\n"))
				if i >= 0 {
					events += bytes.Count(tail[:i+2], []byte("data:"))
					done += bytes.Count(tail[:i+2], []byte("data: [DONE]"))
				}
				if bytes.HasSuffix(tail, []byte("\r\n0\r\n\r\n")) {
					break
				}
				if i >= 0 {
					tail = append(tail[:0], tail[i+2:]...)
				}
			}
			if err == io.EOF {
				return events, done, fmt.Errorf("connection closed mid-response")
			}
			if err != nil {
				return events, done, err
			}
		}
	}
	if last.IsZero() && events > 0 {
		return events, done, fmt.Errorf("no clock reading")
	}
	return events, done, nil
}
