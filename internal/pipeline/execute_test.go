package pipeline

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
)

// A run cut short by cancellation is marked interrupted in benchfmt and
// the result header, with its unsent requests counted; one stopped at its
// maximum duration is not.
func TestOutcomeInterrupted(t *testing.T) {
	recs := []metrics.Record{{Success: true}, {Unsent: true}, {Unsent: true}}
	for _, tc := range []struct {
		stopped error
		want    bool
	}{
		{nil, false},
		{fmt.Errorf("run: %w", engine.ErrMaxDuration), false},
		{context.Canceled, true},
	} {
		o := &Outcome{Plan: &Plan{}, Target: &Target{}, Result: &engine.Result{Records: recs, Stopped: tc.stopped}}
		assert.Equal(t, tc.want, o.Interrupted(), "%v", tc.stopped)
		assert.Equal(t, tc.want, containsConfig(o.BenchConfig(), "interrupted", "true"), "%v", tc.stopped)
		info := o.RunInfo()
		assert.Equal(t, tc.want, info.Interrupted)
		if tc.want {
			assert.Equal(t, 2, info.Unsent)
		}
	}
}

// The result header states the load the engine ran, whatever changed the
// plan's engine after NewPlan (a flag, a capacity step): the header and
// the engine cannot disagree.
func TestRunInfoStatesTheEngineLoad(t *testing.T) {
	sc := parse(t, `
name: load
target: {kind: inproc, profile: instant}
load: {request_rate: 50, burstiness: 0.5, max_concurrency: 4}
`)
	p := NewPlan(sc)
	p.Engine.RequestRate, p.Engine.MaxConcurrency = 9, 0
	o := &Outcome{Plan: p, Target: &Target{}, Result: &engine.Result{}}
	info := o.RunInfo()
	assert.Equal(t, 9.0, info.RequestRate)
	assert.Equal(t, 0.5, info.Burstiness)
	assert.Equal(t, 0, info.MaxConcurrency)
	assert.Empty(t, info.RampUpStrategy)

	p.Engine.RampUp = &engine.RampUp{Strategy: "linear", StartRPS: 2, EndRPS: 20}
	p.Engine.RequestRate = math.Inf(1)
	info = o.RunInfo()
	assert.True(t, math.IsInf(info.RequestRate, 1))
	assert.Equal(t, "linear", info.RampUpStrategy)
	assert.Equal(t, 2, info.RampUpStartRPS)
	assert.Equal(t, 20, info.RampUpEndRPS)
}

func containsConfig(cfg []report.BenchConfig, k, v string) bool {
	for _, c := range cfg {
		if c.Key == k && c.Value == v {
			return true
		}
	}
	return false
}

// A run where every request failed measured no latency: a latency bound
// reads MISSING and fails instead of passing on the summary's 0, and
// benchfmt carries only the failure ratio.
func TestAllFailedRunPassesNoLatencyBound(t *testing.T) {
	sc := parse(t, `
name: allfail
target: {kind: inproc, profile: instant, args: ["--fault_rate_500=1"]}
dataset: {num_prompts: 6, input_len: 32, output_len: 4}
load: {ready_timeout: 0s}
slo: {bounds: ["p99_ttft_ms <= 1000", "mean_tpot_ms <= 100"]}
`)
	plan := NewPlan(sc)
	tgt, err := StartTarget(context.Background(), plan.Target, nil)
	require.NoError(t, err)
	defer tgt.Close(context.Background())
	o, err := Execute(context.Background(), plan, tgt, Hooks{})
	require.NoError(t, err)
	require.Equal(t, 0, o.Summary.Completed)
	for _, v := range o.Verdicts {
		assert.False(t, v.Found, v.Bound.Metric)
		assert.False(t, v.Pass, v.Bound.Metric)
	}
	for _, m := range o.BenchMetrics() {
		assert.NotRegexp(t, `^(ttft|tpot|itl|e2el)-|tok/s|req/s`, m.Unit, "an all-failed run measured no latency or throughput")
	}
	assert.NotEmpty(t, o.BenchMetrics(), "fail-ratio and the harness health remain")
}

// TestPrepareReusesDatasets: a scenario planned again in one process (as
// go test -count runs it) gets its samples from memory; a changed seed
// builds new ones.
func TestPrepareReusesDatasets(t *testing.T) {
	sc := parse(t, `
name: reuse
target: {kind: inproc, profile: instant}
dataset: {name: random, num_prompts: 6, input_len: 24, output_len: 4, seed: 911}
`)
	ctx := context.Background()
	loads := preparedDatasets.Loads()
	first := NewPlan(sc)
	require.NoError(t, first.Prepare(ctx))
	require.Equal(t, loads+1, preparedDatasets.Loads())
	for range 3 {
		again := NewPlan(sc)
		require.NoError(t, again.Prepare(ctx))
		assert.Equal(t, first.Samples(), again.Samples())
	}
	assert.Equal(t, loads+1, preparedDatasets.Loads(), "the same scenario is not loaded again")

	other := NewPlan(sc)
	other.Dataset.Seed++
	require.NoError(t, other.Prepare(ctx))
	assert.Equal(t, loads+2, preparedDatasets.Loads())
	assert.NotEqual(t, first.Samples(), other.Samples())
}
