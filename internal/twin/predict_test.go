package twin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/sim"
)

// planOf parses one scenario and makes its plan.
func planOf(tb testing.TB, yaml string) *pipeline.Plan {
	tb.Helper()
	scs, err := scenario.Parse("predict.yaml", []byte(yaml))
	require.NoError(tb, err)
	require.Len(tb, scs, 1)
	return pipeline.NewPlan(scs[0])
}

// tenMS is a profile whose every step lasts 10 ms.
func tenMS() sim.Params {
	p := sim.DefaultParams()
	p.StepFixedMS, p.PrefillTokenUS, p.SeqUS, p.ContextTokenNS = 10, 0, 0, 0
	return p
}

const fivePrompts = `
name: predict
target: {kind: inproc}
dataset: {name: random, num_prompts: 5, input_len: 32, output_len: 4}
sampling: {ignore_eos: true}
`

func predictedValue(tb testing.TB, o *pipeline.Outcome, name string) float64 {
	tb.Helper()
	v, ok := o.Value(name)
	require.True(tb, ok, name)
	return v
}

// TestPredict checks predicted runs against timelines worked out by hand
// on 10 ms steps: four tokens take 40 ms, one request at a time.
func TestPredict(t *testing.T) {
	for _, c := range []struct {
		name, load string
		want       map[string]float64
		starts     []time.Duration
	}{
		{
			name:   "one at a time",
			load:   "load: {max_concurrency: 1, ready_timeout: 0s}",
			want:   map[string]float64{"completed": 5, "duration": 0.2, "mean_ttft_ms": 10, "mean_itl_ms": 10, "mean_tpot_ms": 10, "output_throughput": 100},
			starts: []time.Duration{0, 40 * time.Millisecond, 80 * time.Millisecond, 120 * time.Millisecond, 160 * time.Millisecond},
		},
		{
			name:   "warm-ups run before time zero",
			load:   "load: {max_concurrency: 1, warmups: 3}",
			want:   map[string]float64{"completed": 5, "duration": 0.2, "mean_ttft_ms": 10},
			starts: []time.Duration{0, 40 * time.Millisecond, 80 * time.Millisecond, 120 * time.Millisecond, 160 * time.Millisecond},
		},
		{
			name:   "all at once batch together",
			load:   "load: {ready_timeout: 0s}",
			want:   map[string]float64{"completed": 5, "duration": 0.04, "mean_ttft_ms": 10, "output_throughput": 500, "max_concurrent_requests": 5},
			starts: []time.Duration{0, 0, 0, 0, 0},
		},
		{
			name: "max duration cuts the run",
			load: "load: {max_concurrency: 1, max_duration: 100ms, ready_timeout: 0s}",
			// Two finish, the third is cut at 100 ms, two are never sent.
			want:   map[string]float64{"completed": 2, "failed": 1, "failed_canceled": 1, "duration": 0.1},
			starts: []time.Duration{0, 40 * time.Millisecond, 80 * time.Millisecond, 0, 0},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := Predict(context.Background(), planOf(t, fivePrompts+c.load), tenMS())
			require.NoError(t, err)
			for name, want := range c.want {
				assert.InDelta(t, want, predictedValue(t, o, name), 1e-9, name)
			}
			for i, r := range o.Result.Records {
				assert.Equal(t, c.starts[i], r.Start, "start of request %d", i)
			}
			assert.Equal(t, TargetKind, o.Target.Kind)
			assert.Empty(t, o.Health, "a prediction has no load generator to check")
		})
	}
}

// TestPredictStopped: a run cut by max_duration says so, as a real one
// does, and its unsent requests are marked.
func TestPredictStopped(t *testing.T) {
	o, err := Predict(context.Background(), planOf(t, fivePrompts+"load: {max_concurrency: 1, max_duration: 100ms}"), tenMS())
	require.NoError(t, err)
	assert.ErrorIs(t, o.Result.Stopped, engine.ErrMaxDuration)
	unsent := 0
	for _, r := range o.Result.Records {
		if r.Unsent {
			unsent++
		}
	}
	assert.Equal(t, 2, unsent)
}

// TestPredictSchedule: requests are sent at the benchmark engine's own
// arrival times for the plan's rate, burstiness and seed.
func TestPredictSchedule(t *testing.T) {
	plan := planOf(t, fivePrompts+"load: {request_rate: 20, burstiness: 0.5}")
	o, err := Predict(context.Background(), plan, tenMS())
	require.NoError(t, err)
	want, _, err := engine.Arrivals(plan.Engine, plan.Samples())
	require.NoError(t, err)
	for i, r := range o.Result.Records {
		assert.Equal(t, want[i], r.Scheduled, "request %d", i)
		assert.GreaterOrEqual(t, r.Start, r.Scheduled)
	}
	assert.NotEqual(t, want[1]-want[0], want[2]-want[1], "a gamma schedule, not a constant one")
}

// TestPredictRefused: what the server refuses fails as it would; what a
// replay cannot run is an error.
func TestPredictRefused(t *testing.T) {
	small := tenMS()
	small.MaxModelLen = 40
	o, err := Predict(context.Background(), planOf(t, strings.Replace(fivePrompts, "output_len: 4", "output_len: 16", 1)), small)
	require.NoError(t, err)
	assert.Equal(t, 5, o.Summary.Failed)
	assert.Equal(t, 5, o.Summary.FailuresByKind[metrics.FailureHTTPStatus])
	assert.Contains(t, o.Result.Records[0].Error, "over the profile's max_model_len 40")

	bad := tenMS()
	bad.MaxNumSeqs = 0
	for _, c := range []struct {
		name, yaml string
		p          sim.Params
		want       string
		is         error
	}{
		{"sessions", `
name: s
target: {kind: inproc}
sessions:
  source:
    kind: synthetic
    num_conversations: 2
    prompt_input:
      num_turns: {distribution: constant, value: 2}
      num_tokens: {distribution: constant, value: 16}
    prompt_output:
      num_tokens: {distribution: constant, value: 4}
`, tenMS(), "virtual time: sessions not supported yet", ErrSessions},
		{"capacity", fivePrompts + "slo: {bounds: [\"failed == 0\"]}\ncapacity: {min_rate: 1, max_rate: 4}\n", tenMS(), "predict it with servegate capacity --virtual", nil},
		{"pooling", "name: e\ntarget: {kind: inproc}\nbackend: openai-embeddings\ndataset: {name: random, num_prompts: 2, input_len: 8}\n", tenMS(), "pooling backends (openai-embeddings) not supported", nil},
		{"invalid profile", fivePrompts, bad, "max_num_seqs: must be > 0", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Predict(context.Background(), planOf(t, c.yaml), c.p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			if c.is != nil {
				assert.True(t, errors.Is(err, c.is))
			}
		})
	}
}
