package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/sim"
)

// executeScenario plans src and runs it once on tgt (started from the
// scenario when nil).
func executeScenario(t *testing.T, src string, tgt *Target) (*Outcome, *Target) {
	t.Helper()
	plan := NewPlan(parse(t, src))
	if tgt == nil {
		var err error
		tgt, err = StartTarget(t.Context(), plan.Target, io.Discard)
		require.NoError(t, err)
		t.Cleanup(func() { tgt.Close(context.Background()) })
	}
	o, err := Execute(t.Context(), plan, tgt, Hooks{})
	require.NoError(t, err)
	return o, tgt
}

const serverScenario = `
name: server
target: {kind: inproc, profile: instant}
dataset: {name: random, num_prompts: 30, input_len: 64, output_len: 12, seed: 5}
load: {request_rate: 300, warmups: 2}
sampling: {ignore_eos: true}
server_metrics: {interval: 50ms}
# No harness limits: a rerun of an invalid run on this loaded machine would
# find the first attempt's prompts cached and warn, which is right there.
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
slo:
  bounds: ["server.num_preemptions == 0", "server.generation_tokens == 360", "server.kv_cache_usage_peak < 1"]
`

// TestExecuteScrapesServerMetrics: the result JSON carries server_metrics,
// its token count is the client's, and SLOs bound server metrics.
func TestExecuteScrapesServerMetrics(t *testing.T) {
	o, _ := executeScenario(t, serverScenario, nil)
	require.NotNil(t, o.Server)
	require.True(t, o.Server.Available, o.Server.Note)
	for _, v := range o.Verdicts {
		assert.True(t, v.Pass, "%s measured %v (found %v)", v.Bound, v.Measured, v.Found)
	}
	assert.Empty(t, o.Result.Warnings, "a first run on a fresh server warns of nothing")

	var res map[string]any
	require.NoError(t, json.Unmarshal(o.ResultJSON(o.RunInfo(), true), &res))
	sm, ok := res["server_metrics"].(map[string]any)
	require.True(t, ok, "server_metrics is an object")
	assert.Equal(t, true, sm["available"])
	assert.Equal(t, res["total_output_tokens"], sm["generation_tokens"], "the server generated what the client counted (warm-ups left out)")
	for _, k := range []string{"prefix_cache_hit_rate", "num_preemptions", "kv_cache_usage_peak", "num_requests_waiting_peak", "num_requests_running_peak", "p50_ttft_ms", "p99_ttft_ms", "p50_queue_time_ms", "p99_queue_time_ms", "p50_e2e_latency_ms", "p99_e2e_latency_ms"} {
		assert.Contains(t, sm, k)
	}
	cfg, ok := res["server_config"].(map[string]any)
	require.True(t, ok, "server_config is an object")
	cc, ok := cfg["vllm:cache_config_info"].(map[string]any)
	require.True(t, ok, "server_config keeps vllm:cache_config_info's labels")
	assert.Equal(t, "16", cc["block_size"])
	assert.Contains(t, cfg, "servegate:sim_info", "the simulator says it is one")
	assert.NotContains(t, cfg, "serve_args", "servegate passed an inproc target no server flags")
	series, ok := res["server_metrics_series"].(map[string]any)
	require.True(t, ok, "a detailed result keeps the raw series")
	assert.GreaterOrEqual(t, len(series["t"].([]any)), 2)
	assert.Len(t, series["vllm:num_requests_running"], len(series["t"].([]any)))

	var short map[string]any
	require.NoError(t, json.Unmarshal(o.ResultJSON(o.RunInfo(), false), &short))
	assert.Contains(t, short, "server_metrics")
	assert.NotContains(t, short, "server_metrics_series")

	units := map[string]bool{}
	for _, m := range o.BenchMetrics() {
		units[m.Unit] = true
	}
	assert.True(t, units["server-preemptions"])
	assert.True(t, units["server-ttft-p99-sec"])
}

// noReset serves a simulator without its prefix-cache reset, as a
// server that offers none.
func noReset(t *testing.T) *Target {
	t.Helper()
	srv, err := sim.New(sim.Config{Profile: "instant"})
	require.NoError(t, err)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ResetPath {
			http.NotFound(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return &Target{Kind: scenario.TargetURL, BaseURL: hs.URL, Model: srv.Params().Model, ServedModelName: srv.Params().Model}
}

// TestContaminationWarnings: on a server that offers no reset, a second
// run of the same prompts finds the prefix cache warm and says so; the
// run's record says the cache was not reset.
func TestContaminationWarnings(t *testing.T) {
	tgt := noReset(t)
	o, _ := executeScenario(t, serverScenario, tgt)
	require.Empty(t, o.Result.Warnings)
	require.NotNil(t, o.PrefixCache)
	assert.False(t, o.PrefixCache.Done)
	assert.Contains(t, o.PrefixCache.Note, "no POST /reset_prefix_cache (status 404)")
	assert.Contains(t, o.BenchConfig(), report.BenchConfig{Key: "prefix-cache", Value: "not reset"})
	var res map[string]any
	require.NoError(t, json.Unmarshal(o.ResultJSON(o.RunInfo(), false), &res))
	assert.Equal(t, map[string]any{"reset": false, "note": o.PrefixCache.Note}, res["prefix_cache"])

	o, _ = executeScenario(t, serverScenario, tgt)
	assert.Contains(t, fmt.Sprint(o.Result.Warnings), "had already served", "hits before a run that declares no shared prefix")

	o, _ = executeScenario(t, repeatedScenario, tgt)
	assert.NotContains(t, fmt.Sprint(o.Result.Warnings), "had already served", "prefix_repetition declares sharing")
	first, ok := o.Server.Value("prefix_cache_hit_rate")
	require.True(t, ok)
	o, _ = executeScenario(t, repeatedScenario, tgt)
	second, _ := o.Server.Value("prefix_cache_hit_rate")
	require.Greater(t, second, first, "the repeat finds its prefixes cached")
	assert.Contains(t, fmt.Sprint(o.Result.Warnings), "grew from")
}

const repeatedScenario = `
name: repeated
target: {kind: inproc, profile: instant}
dataset: {name: prefix_repetition, num_prompts: 20, prefix_len: 64, suffix_len: 16, num_prefixes: 10, output_len: 4}
load: {request_rate: 100}
server_metrics: {interval: 100ms}
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
`

// TestPrefixCacheReset: the simulator empties its prefix cache before
// every run, so repeats on one target neither warn nor find earlier
// prompts cached, and their records say the cache was reset.
func TestPrefixCacheReset(t *testing.T) {
	o, tgt := executeScenario(t, serverScenario, nil)
	for range 2 {
		require.Equal(t, &PrefixCacheReset{Done: true, Offered: true}, o.PrefixCache)
		assert.Empty(t, o.Result.Warnings)
		o, _ = executeScenario(t, serverScenario, tgt)
	}
	assert.Contains(t, o.BenchConfig(), report.BenchConfig{Key: "prefix-cache", Value: "reset"})
	var res map[string]any
	require.NoError(t, json.Unmarshal(o.ResultJSON(o.RunInfo(), false), &res))
	assert.Equal(t, map[string]any{"reset": true}, res["prefix_cache"])

	o, tgt = executeScenario(t, repeatedScenario, nil)
	first, _ := o.Server.Value("prefix_cache_hit_rate")
	o, _ = executeScenario(t, repeatedScenario, tgt)
	second, _ := o.Server.Value("prefix_cache_hit_rate")
	assert.NotContains(t, fmt.Sprint(o.Result.Warnings), "grew from", "hit rates %.3f then %.3f", first, second)
}

// firstTurns is a session scenario whose first turns each carry 2,048
// tokens of their own: 102 ms of modelled prefill when nothing is cached.
const firstTurns = `
name: first-turns
target:
  kind: inproc
  profile: instant
  args: [--prefill_token_us=50, --step_fixed_ms=1]
sessions:
  source:
    kind: synthetic
    num_conversations: 4
    prompt_input:
      num_turns: {distribution: constant, value: 4}
      prefix_num_tokens: {distribution: constant, value: 2048}
      num_tokens: {distribution: constant, value: 16}
    prompt_output:
      num_tokens: {distribution: constant, value: 4}
  max_active: 1
load: {max_duration: 1m}
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
`

// TestFirstTurnTTFTStaysAcrossRuns: repeated runs of one session
// scenario on one target (go test -count) start on an empty cache, so
// their first turns pay the whole prefill each time. On a server that
// offers no reset, the second run's first turns are cached.
//
// The bound cannot fail by noise. A first turn's modelled prefill is
// 2,048 x 50 µs = 102.4 ms, and the simulator's clock only overshoots a
// modelled step, never cuts it short. A cached first turn recomputes at
// most one block of 16 tokens, under 2 ms of prefill, and its TTFT
// exceeds 51 ms only when a request waits 49 ms for nothing.
func TestFirstTurnTTFTStaysAcrossRuns(t *testing.T) {
	const floor = 2048 * 50e-3 // ms of modelled prefill
	o, tgt := executeScenario(t, firstTurns, nil)
	for run := 1; run <= 3; run++ {
		first := o.Summary.Sessions.TTFTFirstTurn.Median
		require.GreaterOrEqual(t, first, floor, "run %d: median first-turn TTFT %.1f ms", run, first)
		o, _ = executeScenario(t, firstTurns, tgt)
	}

	plain := parse(t, firstTurns)
	plain.Target = scenario.Target{Kind: scenario.TargetInproc, Profile: "instant", Args: plain.Target.Args}
	srv, err := StartTarget(t.Context(), plain.Target, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close(context.Background()) })
	u, err := url.Parse(srv.BaseURL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ResetPath {
			http.NotFound(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	bare := *srv
	bare.BaseURL = hs.URL
	executeScenario(t, firstTurns, &bare)
	o, _ = executeScenario(t, firstTurns, &bare)
	assert.Less(t, o.Summary.Sessions.TTFTFirstTurn.Median, floor/2, "without a reset, the repeat's first turns are cached")
}

// TestNoMetricsEndpointIsANote: a server without /metrics runs as usual,
// with a note instead of server values, and server.* bounds fail closed.
func TestNoMetricsEndpointIsANote(t *testing.T) {
	srv, err := sim.New(sim.Config{Profile: "instant"})
	require.NoError(t, err)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	sc := parse(t, serverScenario)
	sc, err = sc.Override(scenario.Env{URL: hs.URL})
	require.NoError(t, err)
	plan := NewPlan(sc)
	tgt, err := StartTarget(t.Context(), plan.Target, io.Discard)
	require.NoError(t, err)
	o, err := Execute(t.Context(), plan, tgt, Hooks{})
	require.NoError(t, err)
	assert.Equal(t, 30, o.Summary.Completed)
	assert.False(t, o.Server.Available)
	assert.Contains(t, fmt.Sprint(o.Result.Warnings), "no metrics endpoint")
	for _, v := range o.Verdicts {
		assert.False(t, v.Pass, "%s cannot pass without the metric", v.Bound)
	}
	var res map[string]any
	require.NoError(t, json.Unmarshal(o.ResultJSON(o.RunInfo(), false), &res))
	assert.Contains(t, res["server_metrics"].(map[string]any)["note"], "no metrics endpoint")
}

// TestServerConfig: server_config holds each info family's labels, sorted,
// and the serve flags; nothing when there is neither.
func TestServerConfig(t *testing.T) {
	assert.Nil(t, serverConfig(nil, nil))
	cfg := serverConfig(map[string]map[string]string{
		"vllm:cache_config_info": {"num_gpu_blocks": "8192", "block_size": "128"},
	}, []string{"--max-num-seqs", "8"})
	require.Len(t, cfg, 2)
	assert.Equal(t, "vllm:cache_config_info", cfg[0].Key)
	assert.Equal(t, []metrics.Field{{Key: "block_size", Value: "128"}, {Key: "num_gpu_blocks", Value: "8192"}}, cfg[0].Value)
	assert.Equal(t, metrics.Field{Key: "serve_args", Value: []string{"--max-num-seqs", "8"}}, cfg[1])
}
