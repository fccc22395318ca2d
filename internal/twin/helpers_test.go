package twin

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/sim"
)

// workload is one run's requests before a server answers them.
type workload struct {
	name           string
	n              int
	rate           float64 // req/s, Poisson; 0 = all at once
	promptLo, hiP  int
	outLo, outHi   int
	maxConcurrency int
	seed           uint64
}

// requests draws the workload's requests: Poisson arrivals, uniform
// prompt and output lengths, prompts that share no tokens with another
// workload's.
func (w workload) requests() []sim.VirtualRequest {
	rng := rand.New(rand.NewPCG(w.seed, 7))
	var at time.Duration
	reqs := make([]sim.VirtualRequest, w.n)
	for i := range reqs {
		if w.rate > 0 {
			at += time.Duration(rng.ExpFloat64() / w.rate * float64(time.Second))
		}
		n := w.promptLo + rng.IntN(w.hiP-w.promptLo+1)
		prompt := make([]int, n)
		for j := range prompt {
			prompt[j] = 1 + rng.IntN(100000)
		}
		reqs[i] = sim.VirtualRequest{Arrival: at, Prompt: prompt, MaxTokens: w.outLo + rng.IntN(w.outHi-w.outLo+1)}
	}
	return reqs
}

// recordsOf turns replay results into the records a client would have
// measured: sent at Sent, a chunk per token.
func recordsOf(reqs []sim.VirtualRequest, res []sim.VirtualResult) ([]metrics.Record, time.Duration) {
	recs := make([]metrics.Record, len(reqs))
	var end time.Duration
	for i, q := range reqs {
		r := res[i]
		rec := metrics.Record{
			RequestID: "req-" + strconv.Itoa(i), Scheduled: q.Arrival, Dispatched: q.Arrival, Free: r.Sent, Start: r.Sent,
			PromptLen: len(q.Prompt), ServerPromptTokens: len(q.Prompt), OutputTokens: len(r.TokenTimes), Success: true,
		}
		if len(r.TokenTimes) > 0 {
			rec.TTFT = r.TokenTimes[0]
			rec.Latency = r.TokenTimes[len(r.TokenTimes)-1]
			for k := 1; k < len(r.TokenTimes); k++ {
				rec.ITL = append(rec.ITL, r.TokenTimes[k]-r.TokenTimes[k-1])
			}
		}
		end = max(end, rec.Start+rec.Latency)
		recs[i] = rec
	}
	return recs, end + 10*time.Millisecond
}

// resultFile is a detailed result of records with server metrics and
// config as appended keys.
type resultFile struct {
	model          string
	maxConcurrency int
	target         string // "" writes none
	detailed       bool
	appendix       []metrics.Field
}

// write saves the records as a result file under dir and returns its path.
func (f resultFile) write(tb testing.TB, dir, name string, recs []metrics.Record, dur time.Duration) string {
	tb.Helper()
	info := metrics.RunInfo{Date: "20261202-100000", Backend: "openai-chat", ModelID: f.model, TokenizerID: f.model,
		NumPrompts: len(recs), MaxConcurrency: f.maxConcurrency, Extras: true, Appendix: f.appendix}
	if f.target != "" {
		info.Metadata = [][2]string{{"target", f.target}}
	}
	data := metrics.Summarize(recs, dur, metrics.Options{}).ResultJSON(info, f.detailed)
	path := filepath.Join(dir, name)
	require.NoError(tb, os.WriteFile(path, data, 0o644))
	return path
}

// serverMetrics is a server_metrics object whose counters agree with recs.
func serverMetrics(recs []metrics.Record) metrics.Field {
	gen, prompt := 0, 0
	for _, r := range recs {
		gen += r.OutputTokens
		prompt += r.ServerPromptTokens
	}
	return metrics.Field{Key: "server_metrics", Value: []metrics.Field{
		{Key: "available", Value: true}, {Key: "generation_tokens", Value: float64(gen)},
		{Key: "prompt_tokens", Value: float64(prompt)}, {Key: "prefix_cache_hits", Value: 0.0},
		{Key: "num_preemptions", Value: 0.0},
	}}
}

// vllmConfig is a server_config object as a vllm target's run has it.
func vllmConfig(blocks int, args ...string) metrics.Field {
	return metrics.Field{Key: "server_config", Value: []metrics.Field{
		{Key: CacheConfigInfo, Value: []metrics.Field{
			{Key: "block_size", Value: "16"}, {Key: "enable_prefix_caching", Value: "True"},
			{Key: "num_gpu_blocks", Value: strconv.Itoa(blocks)},
		}},
		{Key: "serve_args", Value: args},
	}}
}

// replayed runs a workload through p with the real virtual clock.
func replayed(tb testing.TB, p sim.Params, w workload) ([]metrics.Record, time.Duration) {
	tb.Helper()
	reqs := w.requests()
	res, err := sim.Replay(context.Background(), p, reqs, sim.ReplayOptions{MaxConcurrency: w.maxConcurrency})
	require.NoError(tb, err)
	require.Len(tb, res, len(reqs))
	return recordsOf(reqs, res)
}
