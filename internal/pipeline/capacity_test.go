package pipeline

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/capacity"
	"github.com/servegate/servegate/internal/report"
)

// TestCapacityFindsTheSimulatorsSaturation runs the shipped capacity
// scenario on the in-process simulator. Its step costs make the
// saturation point known: 8 sequences a step, 20 ms a step, 16 tokens a
// request, so 8 / (16 × 0.020 s) = 25 req/s. The search must land within
// [0.80, 1.12] of it. The band is not symmetric because the noise is not:
// the simulator runs its steps in real time, and CPU time spent elsewhere
// is capacity lost (22.3-23.3 req/s, 0.89-0.93, beside other benchmarks;
// scenarios/capacity.yaml), so a busy machine can only pull the answer
// down, while the top is the search's own bias (a 3 s step sees the
// queue's growth late: the edge interpolates to about 26.6, 1.06). A
// search that found 8 (the floor), 128 (the ceiling) or twice the real
// saturation is still far outside.
func TestCapacityFindsTheSimulatorsSaturation(t *testing.T) {
	if testing.Short() {
		t.Skip("a capacity search takes about 40 s")
	}
	scs, err := scenario.LoadFile("../../scenarios/capacity.yaml")
	require.NoError(t, err)
	sc, err := scs[0].Override(scenario.Env{Target: scenario.TargetInproc})
	require.NoError(t, err)
	plan := NewPlan(sc)
	tgt, err := StartTarget(t.Context(), plan.Target, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { tgt.Close(t.Context()) })

	var seen []capacity.Step
	cs, err := SearchCapacity(t.Context(), plan, tgt, CapacityHooks{Step: func(st capacity.Step, o *Outcome) {
		seen = append(seen, st)
		assert.Equal(t, st.Rate, o.Plan.Engine.RequestRate)
	}})
	require.NoError(t, err)
	r := cs.Result
	var table bytes.Buffer
	_ = report.WriteCapacityTable(&table, r)
	t.Logf("%s", table.String())
	for _, w := range cs.Warnings {
		t.Logf("warning: %v", w)
	}
	t.Logf("max rate %v, fails at %v, %d steps, stopped %q", r.MaxRate, r.MinFailRate, len(r.Steps), r.Stopped)
	const saturation = 8 / (16 * 0.020)
	for _, got := range []struct {
		what string
		rate float64
	}{{"the search's highest passing rate", r.MaxRate}, {"the interpolated edge", r.Crossing}} {
		assert.True(t, got.rate >= 0.80*saturation && got.rate <= 1.12*saturation,
			"%s is %.2f req/s, want within [0.80, 1.12] × %v (the simulator's saturation point)", got.what, got.rate, saturation)
	}
	assert.GreaterOrEqual(t, r.Crossing, r.MaxRate)
	assert.LessOrEqual(t, r.Crossing, r.MinFailRate)
	for _, st := range r.Steps {
		assert.Equal(t, st.Pass, st.Margin >= 0, "step at %v: the margin's sign is the verdict", st.Rate)
	}
	assert.Equal(t, seen, r.Steps)
	require.NotNil(t, cs.Best)
	assert.Equal(t, r.MaxRate, cs.Best.Plan.Engine.RequestRate)
	assert.True(t, cs.Verdict().Pass)

	var res map[string]any
	// Python's json writes burstiness inf as Infinity, which Go's does not read.
	data := bytes.ReplaceAll(cs.ResultJSON(false), []byte("Infinity"), []byte("null"))
	require.NoError(t, json.Unmarshal(data, &res), "%s", data)
	assert.Equal(t, r.MaxRate, res["max_goodput_rate"])
	assert.Equal(t, r.MaxRate, res["request_rate"], "the file is the run at the highest passing rate")
	c := res["capacity"].(map[string]any)
	assert.Len(t, c["steps"], len(r.Steps))
	step := c["steps"].([]any)[0].(map[string]any)
	assert.Equal(t, r.Crossing, c["crossing_rate"])
	for _, k := range []string{"rate", "pass", "request_goodput", "p99_ttft_ms", "margin", "failed_bounds"} {
		assert.Contains(t, step, k)
	}
	ms := cs.BenchMetrics()
	require.Len(t, ms, 1)
	assert.Equal(t, "max-rate-req/s", ms[0].Unit)
	assert.Equal(t, r.Crossing, ms[0].Value, "benchfmt carries the interpolated edge")
	assert.Equal(t, "higher", ms[0].Better)
}

// TestCapacityNoPassingRate: a search whose first rate already fails reports
// 0 and fails its verdict; the result file holds the search alone.
func TestCapacityNoPassingRate(t *testing.T) {
	sc := parse(t, `
name: hopeless
target: {kind: inproc, profile: instant}
dataset: {name: random, num_prompts: 20, input_len: 16, output_len: 4}
slo: {bounds: ["completed >= 21"]}
capacity: {min_rate: 50, max_rate: 100}
`)
	plan := NewPlan(sc)
	tgt, err := StartTarget(t.Context(), plan.Target, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { tgt.Close(t.Context()) })
	cs, err := SearchCapacity(t.Context(), plan, tgt, CapacityHooks{})
	require.NoError(t, err)
	assert.Equal(t, capacity.StoppedMinRateFailed, cs.Result.Stopped)
	assert.Nil(t, cs.Best)
	assert.False(t, cs.Verdict().Pass)
	var res map[string]any
	require.NoError(t, json.Unmarshal(cs.ResultJSON(true), &res))
	assert.Equal(t, 0.0, res["max_goodput_rate"])
	assert.NotContains(t, res, "completed")
	assert.Equal(t, []any{"completed >= 21"}, res["capacity"].(map[string]any)["steps"].([]any)[0].(map[string]any)["failed_bounds"])
	assert.False(t, math.IsNaN(cs.BenchMetrics()[0].Value))
}
