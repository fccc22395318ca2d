package sim

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/stats"
)

// BenchmarkChunksPerSecond measures how many SSE chunks (and tokens) the
// server emits per second with a zero-latency model: 64 concurrent streams
// of 256 tokens over loopback, read by a minimal client in the same
// process. At zero latency tokens pile up between writes and go out merged,
// as in vLLM, so tokens/s exceeds chunks/s.
func BenchmarkChunksPerSecond(b *testing.B) { chunksPerSecond(b, nil) }

// BenchmarkChunksPerSecondLogprobs is the same with logprobs: 5 (five
// alternatives per token, built per chunk and appended into it).
func BenchmarkChunksPerSecondLogprobs(b *testing.B) {
	chunksPerSecond(b, map[string]any{"logprobs": 5})
}

func chunksPerSecond(b *testing.B, extra map[string]any) {
	p, err := LoadProfile("instant")
	if err != nil {
		b.Fatal(err)
	}
	_, base := start(b, Config{Params: &p})
	const conc, out = 64, 256
	var chunks, tokens atomic.Int64
	var next atomic.Int64
	b.ResetTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				body := completionBody("Hello", out, true)
				body["stream_options"] = map[string]any{"include_usage": true}
				for k, v := range extra {
					body[k] = v
				}
				r := post(context.Background(), base+"/v1/completions", body, nil)
				texts, _ := r.content(b)
				chunks.Add(int64(len(texts)))
				tokens.Add(out)
			}
		})
	}
	wg.Wait()
	el := time.Since(t0).Seconds()
	b.ReportMetric(float64(chunks.Load())/el, "chunks/s")
	b.ReportMetric(float64(tokens.Load())/el, "tokens/s")
	b.ReportMetric(float64(tokens.Load())/float64(chunks.Load()), "tokens/chunk")
}

// BenchmarkITLError256 measures how far the emitted inter-token gaps stray
// from the configured step time with 256 concurrent streams in one batch:
// every step lasts exactly 20 ms (no jitter), so every ITL should be 20 ms.
// "engine" is when the steps ended (token times), "emitted" when the chunks
// were flushed (the ground truth a client is compared with), "client" what
// the in-process client saw. Errors are absolute, in seconds.
func BenchmarkITLError256(b *testing.B) {
	const conc, out, stepMS = 256, 50, 20.0
	p := testParams()
	p.StepFixedMS = stepMS
	p.MaxNumSeqs = conc
	p.MaxNumBatchedTokens = 8192
	s, base := start(b, Config{Params: &p})
	var engine, emitted, client []float64
	var mu sync.Mutex
	b.ResetTimer()
	for n := range b.N {
		var wg sync.WaitGroup
		for i := range conc {
			wg.Go(func() {
				id := fmt.Sprintf("itl-%d-%d", n, i)
				r := post(context.Background(), base+"/v1/completions", completionBody("Hello there", out, true), map[string]string{"X-Request-Id": id})
				_, at := r.content(b)
				tr, _ := s.Truth(id)
				mu.Lock()
				defer mu.Unlock()
				for k := 1; k < len(tr.TokenMS); k++ {
					engine = append(engine, math.Abs(tr.TokenMS[k]-tr.TokenMS[k-1]-stepMS)/1e3)
				}
				for k := 1; k < len(tr.ChunkMS); k++ {
					want := stepMS * float64(tr.ChunkTokens[k])
					emitted = append(emitted, math.Abs(tr.ChunkMS[k]-tr.ChunkMS[k-1]-want)/1e3)
				}
				for k := 1; k < len(at) && k < len(tr.ChunkTokens); k++ {
					want := stepMS * float64(tr.ChunkTokens[k])
					client = append(client, math.Abs(float64(at[k]-at[k-1])/1e6-want)/1e3)
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(stats.Median(engine), "engine-itl-err-p50-sec")
	b.ReportMetric(stats.Quantile(engine, 0.99), "engine-itl-err-p99-sec")
	b.ReportMetric(stats.Median(emitted), "emitted-itl-err-p50-sec")
	b.ReportMetric(stats.Quantile(emitted, 0.99), "emitted-itl-err-p99-sec")
	b.ReportMetric(stats.Median(client), "client-itl-err-p50-sec")
	b.ReportMetric(stats.Quantile(client, 0.99), "client-itl-err-p99-sec")
}
