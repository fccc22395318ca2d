package servermetrics

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/sim"
)

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name   string
		bounds []float64
		counts []float64
		q      float64
		want   float64
	}{
		{"middle of first bucket", []float64{1, 2, inf}, []float64{10, 10, 10}, 0.5, 0.5},
		{"interpolated in second", []float64{1, 2, inf}, []float64{10, 30, 30}, 0.5, 1.25},
		{"p99 in +Inf bucket is the last bound", []float64{1, 2, inf}, []float64{1, 2, 100}, 0.99, 2},
		{"upper edge", []float64{1, 2, inf}, []float64{0, 4, 4}, 1, 2},
		{"empty", []float64{1, inf}, []float64{0, 0}, 0.5, math.NaN()},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := Histogram{Bounds: c.bounds, Counts: c.counts, Count: c.counts[len(c.counts)-1]}
			got := h.Quantile(c.q)
			if math.IsNaN(c.want) {
				assert.True(t, math.IsNaN(got), "got %v", got)
				return
			}
			assert.InDelta(t, c.want, got, 1e-12)
		})
	}
}

func TestSubRejectsReset(t *testing.T) {
	inf := math.Inf(1)
	a := Histogram{Bounds: []float64{1, inf}, Counts: []float64{5, 9}, Count: 9}
	b := Histogram{Bounds: []float64{1, inf}, Counts: []float64{1, 2}, Count: 2}
	d, ok := a.Sub(b)
	require.True(t, ok)
	assert.Equal(t, []float64{4, 7}, d.Counts)
	_, ok = b.Sub(a)
	assert.False(t, ok, "a histogram that went down is a restart")
}

// TestParseRecordedVLLM reads the exposition a real vLLM 0.13 served
// (fixtures/vllm-recorded) with the same code a run uses.
func TestParseRecordedVLLM(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(fixtures.Dir(), "fixtures", "vllm-recorded", "metrics.body.txt"))
	require.NoError(t, err)
	h := http.Header{"Content-Type": {"text/plain; version=0.0.4; charset=utf-8"}}
	fams, err := Parse(h, bytes.NewReader(body))
	require.NoError(t, err)
	s := newSnapshot(time.Now(), fams)
	assert.Equal(t, 2806.0, s.Values[PrefixCacheQueries])
	assert.Equal(t, 0.0, s.Values[PrefixCacheHits])
	for _, n := range append(slices.Clone(counters), gauges...) {
		assert.Contains(t, s.Values, n)
	}
	for _, n := range specCounters {
		assert.NotContains(t, s.Values, n, "vLLM exports %s only with a speculative config", n)
	}
	// The KV-cache configuration vLLM states (what calibration takes
	// rather than fits); a real server has no simulator info.
	cc := s.Info[CacheConfigInfo]
	assert.Equal(t, "128", cc["block_size"])
	assert.Equal(t, "8192", cc["num_gpu_blocks"])
	assert.Equal(t, "True", cc["enable_prefix_caching"])
	assert.NotContains(t, s.Info, SimInfo)
	for _, n := range hists {
		require.Contains(t, s.Histograms, n)
		hh := s.Histograms[n]
		assert.True(t, math.IsInf(hh.Bounds[len(hh.Bounds)-1], 1))
		assert.Equal(t, hh.Count, hh.Counts[len(hh.Counts)-1])
	}
}

func TestParseLimits(t *testing.T) {
	_, err := Parse(http.Header{}, strings.NewReader("vllm:num_requests_running{ 1\n"))
	assert.ErrorContains(t, err, "parse metrics")
	big := strings.Repeat("# comment line of some length\n", maxBody/29+10)
	_, err = Parse(http.Header{}, strings.NewReader(big))
	assert.ErrorContains(t, err, "larger than")
}

func TestNoEndpointIsANote(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	r := NewRecorder(hs.URL, Options{Interval: 10 * time.Millisecond}, nil)
	ctx := context.Background()
	r.Before(ctx)
	r.Start(ctx)
	time.Sleep(30 * time.Millisecond)
	r.Stop(ctx)
	s := Summarize(r)
	assert.False(t, s.Available)
	assert.Contains(t, s.Note, "no metrics endpoint")
	assert.Equal(t, 1, s.FailedScrapes, "a missing endpoint is asked once")
	assert.Empty(t, s.Values)
}

// TestScrapeMatchesSimulatorTruth runs requests against the simulator
// (a small KV cache, so that it preempts, and shared prefixes, so that the
// prefix cache hits) and checks the summary against the simulator's own
// ground truth: its per-request records (/debug/requests/{id}) and its
// step log (/debug/steps).
func TestScrapeMatchesSimulatorTruth(t *testing.T) {
	srv, err := sim.New(sim.Config{Profile: "cpu-small", Set: map[string]string{
		"num_kv_blocks": "48", "max_model_len": "512", "max_num_batched_tokens": "512", "step_fixed_ms": "2", "seq_us": "200", "prefill_token_us": "10", "jitter": "0",
	}})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer func() { hs.Close(); srv.Close() }()

	r := NewRecorder(hs.URL, Options{Interval: 20 * time.Millisecond}, nil)
	ctx := context.Background()
	r.Before(ctx)
	r.Start(ctx)
	const n = 24
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		ids[i] = fmt.Sprintf("truth-%d", i)
		prefix := strings.Repeat(fmt.Sprintf("shared%d ", i%3), 64)
		body, _ := json.Marshal(map[string]any{
			"model": srv.Params().Model, "prompt": prefix + fmt.Sprintf("tail %d %d", i, i*7),
			"max_tokens": 40, "ignore_eos": true,
		})
		wg.Go(func() {
			if i >= 3 {
				time.Sleep(time.Duration(i) * 5 * time.Millisecond) // let the first of each prefix fill the cache
			}
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", ids[i])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("request %d: %s", i, resp.Status)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	r.Stop(ctx)
	s := Summarize(r)
	require.True(t, s.Available, s.Note)
	assert.Empty(t, s.Note)
	assert.GreaterOrEqual(t, s.Scrapes, 2)
	// The simulator states its cache configuration as vLLM does, and that
	// it is the simulator.
	assert.Equal(t, "48", s.Info[CacheConfigInfo]["num_gpu_blocks"])
	assert.Contains(t, s.Info, SimInfo)

	var gen, prompt, cached, preempt int
	var ttft, queue, e2e []float64
	for _, id := range ids {
		var tr sim.Truth
		getJSON(t, hs.URL+"/debug/requests/"+id, &tr)
		gen += tr.OutputTokens
		prompt += tr.PromptTokens
		cached += tr.CachedTokens
		preempt += tr.Preemptions
		ttft = append(ttft, tr.TokenMS[0])
		queue = append(queue, tr.QueueMS)
		e2e = append(e2e, tr.TokenMS[len(tr.TokenMS)-1])
	}
	var steps []sim.Step
	getJSON(t, hs.URL+"/debug/steps", &steps)
	maxKV := 0.0
	for _, st := range steps {
		maxKV = math.Max(maxKV, st.KVUsage)
	}

	v := s.Values
	assert.Equal(t, float64(gen), v["generation_tokens"], "generation tokens: truth %d", gen)
	assert.Equal(t, float64(n*40), v["generation_tokens"])
	assert.Equal(t, float64(cached), v["prefix_cache_hits"])
	assert.Equal(t, float64(prompt), v["prefix_cache_queries"])
	assert.Positive(t, cached, "the workload shares prefixes")
	assert.InDelta(t, float64(cached)/float64(prompt), v["prefix_cache_hit_rate"], 1e-12)
	assert.Equal(t, float64(preempt), v["num_preemptions"])
	assert.Positive(t, preempt, "the small KV cache preempts")
	assert.Positive(t, v["kv_cache_usage_peak"])
	assert.LessOrEqual(t, v["kv_cache_usage_peak"], 1.0)
	assert.LessOrEqual(t, v["num_requests_waiting_peak"], float64(n))
	assert.Positive(t, v["num_requests_running_peak"])
	assert.LessOrEqual(t, v["num_requests_running_peak"], 16.0, "max_num_seqs")
	assert.LessOrEqual(t, v["kv_cache_usage_peak"], maxKV+1e-9, "no scrape saw more KV use than a step had")

	// The percentiles are interpolated within vLLM's buckets: they must
	// land in the bucket that holds the exact percentile of the truth.
	for _, c := range []struct {
		name   string
		truth  []float64
		bounds []float64
		q      float64
	}{
		{"p50_ttft_ms", ttft, ttftBounds, 0.5}, {"p99_ttft_ms", ttft, ttftBounds, 0.99},
		{"p50_queue_time_ms", queue, e2eBounds, 0.5}, {"p99_queue_time_ms", queue, e2eBounds, 0.99},
		{"p50_e2e_latency_ms", e2e, e2eBounds, 0.5}, {"p99_e2e_latency_ms", e2e, e2eBounds, 0.99},
	} {
		lo, hi := bucketOf(c.bounds, rankValue(c.truth, c.q)/1000)
		got := v[c.name] / 1000
		assert.True(t, got >= lo-1e-9 && got <= hi+1e-9, "%s = %v s, the truth's is in bucket (%v, %v]", c.name, got, lo, hi)
	}
}

// vLLM's bucket bounds (seconds) of the TTFT and the request-time
// histograms.
var (
	ttftBounds = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	e2eBounds  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// rankValue is the value at rank ceil(q·n) of xs, the observation a
// histogram's q-quantile bucket holds.
func rankValue(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// bucketOf returns the bucket (lower, upper] holding v.
func bucketOf(bounds []float64, v float64) (lo, hi float64) {
	for _, b := range bounds {
		if v <= b {
			return lo, b
		}
		lo = b
	}
	return lo, lo
}

func getJSON(tb testing.TB, url string, v any) {
	tb.Helper()
	resp, err := http.Get(url)
	require.NoError(tb, err)
	defer resp.Body.Close()
	require.Equal(tb, http.StatusOK, resp.StatusCode, url)
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(v))
}

// TestStopWaitsForLateCounters serves an exposition that, like vLLM's,
// counts the run's last tokens a little after the run ended: the summary
// must hold them, not the count of the scrape at the instant of Stop.
func TestStopWaitsForLateCounters(t *testing.T) {
	var mu sync.Mutex
	gen, running := 100.0, 1.0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total %g\n"+
			"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running %g\n", gen, running)
	}))
	defer hs.Close()
	r := NewRecorder(hs.URL, Options{Interval: time.Hour}, nil)
	ctx := context.Background()
	r.Start(ctx)
	mu.Lock()
	gen = 340 // the run's requests, all but the last 16 tokens counted
	mu.Unlock()
	time.AfterFunc(120*time.Millisecond, func() {
		mu.Lock()
		gen, running = 356, 0
		mu.Unlock()
	})
	r.Stop(ctx)
	s := Summarize(r)
	assert.Equal(t, 256.0, s.Values["generation_tokens"])
	assert.Len(t, s.Series, 2, "the settled scrape replaces the last one")
}

// TestSpecDecodeMatchesSimulatorTruth reads the simulator's speculative
// decoding counters over a run: the deltas equal the ground truth's
// accepted drafts and the steps' draft tokens, and the acceptance rate
// and mean acceptance length follow from them as vLLM computes them. A
// server without speculation reports neither.
func TestSpecDecodeMatchesSimulatorTruth(t *testing.T) {
	for _, k := range []string{"3", "0"} {
		srv, err := sim.New(sim.Config{Profile: "instant", Set: map[string]string{"spec_draft_tokens": k, "spec_accept_prob": "0.6"}})
		require.NoError(t, err)
		hs := httptest.NewServer(srv)
		r := NewRecorder(hs.URL, Options{Interval: 50 * time.Millisecond}, nil)
		ctx := context.Background()
		r.Before(ctx)
		r.Start(ctx)
		drafts, accepted := 0, 0
		for i := range 6 {
			id := fmt.Sprintf("spec-%s-%d", k, i)
			body, _ := json.Marshal(map[string]any{"prompt": fmt.Sprintf("hello %d", i), "max_tokens": 30, "ignore_eos": true})
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", id)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			var tr sim.Truth
			getJSON(t, hs.URL+"/debug/requests/"+id, &tr)
			drafts += len(tr.SpecAccepted)
			for _, a := range tr.SpecAccepted {
				accepted += a
			}
		}
		r.Stop(ctx)
		s := Summarize(r)
		var steps []sim.Step
		getJSON(t, hs.URL+"/debug/steps", &steps)
		hs.Close()
		srv.Close()
		require.True(t, s.Available, s.Note)
		if k == "0" {
			for _, name := range []string{"spec_decode_drafts", "spec_decode_acceptance_rate", "spec_decode_mean_acceptance_length"} {
				assert.NotContains(t, s.Values, name)
			}
			continue
		}
		draftTok := 0
		for _, st := range steps {
			draftTok += st.DraftTokens
		}
		require.Positive(t, drafts)
		v := s.Values
		assert.Equal(t, float64(drafts), v["spec_decode_drafts"])
		assert.Equal(t, float64(draftTok), v["spec_decode_draft_tokens"])
		assert.Equal(t, float64(accepted), v["spec_decode_accepted_tokens"])
		assert.InDelta(t, float64(accepted)/float64(draftTok), v["spec_decode_acceptance_rate"], 1e-12)
		assert.InDelta(t, 1+float64(accepted)/float64(drafts), v["spec_decode_mean_acceptance_length"], 1e-12)
	}
}

// TestSummaryNoteIsDeterministic: counters that went down are named in
// the same order every time, so that the same scrapes give the same
// result file.
func TestSummaryNoteIsDeterministic(t *testing.T) {
	first, last := map[string]float64{}, map[string]float64{}
	for _, c := range append(slices.Clone(counters), specCounters...) {
		first[c], last[c] = 10, 1 // every counter went down
	}
	r := &Recorder{interval: time.Second, series: []Snapshot{{Values: first}, {Values: last}}}
	note := Summarize(r).Note
	require.NotEmpty(t, note)
	for range 50 {
		require.Equal(t, note, Summarize(r).Note)
	}
}
