package scenario

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
)

func TestBoundHolds(t *testing.T) {
	cases := []struct {
		bound    string
		measured float64
		want     bool
	}{
		{"p99_ttft_ms <= 800", 800, true},
		{"p99_ttft_ms <= 800", 800.0001, false},
		{"p99_ttft_ms < 800", 800, false},
		{"output_throughput >= 50", 50, true},
		{"output_throughput > 50", 50, false},
		{"failed == 0", 0, true},
		{"failed == 0", 1, false},
		{"failed==0", 0, true},
		{"mean_itl_ms <= 1e3", 999, true},
		{"mean_itl_ms <= 10", math.NaN(), false},
	}
	for _, c := range cases {
		b, err := parseBound(c.bound)
		require.NoError(t, err, c.bound)
		assert.Equal(t, c.want, b.Holds(c.measured), "%s with %v", c.bound, c.measured)
	}
	b, _ := parseBound("failed==0")
	assert.Equal(t, "failed == 0", b.String())
}

func TestSLOCheck(t *testing.T) {
	slo := SLO{Bounds: []Bound{{"p99_ttft_ms", "<=", 800}, {"failed", "==", 0}, {"p95_itl_ms", "<=", 5}, {"goodput_ratio", ">=", 0.9}, {"failure_ratio", "<=", 0.01}}}
	summary := map[string]float64{"p99_ttft_ms": 900, "failed": 0, "completed": 10, "failure_ratio": 0, "request_goodput": 4.5, "request_throughput": 5}
	lookup := WithDerived(func(name string) (float64, bool) { v, ok := summary[name]; return v, ok })
	vs := slo.Check(lookup)
	assert.Equal(t, []Verdict{
		{Bound: slo.Bounds[0], Measured: 900, Found: true, Pass: false},
		{Bound: slo.Bounds[1], Measured: 0, Found: true, Pass: true},
		{Bound: slo.Bounds[2], Found: false, Pass: false},
		{Bound: slo.Bounds[3], Measured: 0.9, Found: true, Pass: true},
		{Bound: slo.Bounds[4], Measured: 0, Found: true, Pass: true},
	}, vs)
}

func TestKnownMetric(t *testing.T) {
	for _, m := range []string{"p99_ttft_ms", "p99.9_itl_ms", "p100_e2el_ms", "mean_tpot_ms", "median_e2el_ms", "std_ttft_ms", "failed", "request_goodput", "goodput_ratio", "failure_ratio", "p99_schedule_lag_ms", "mean_queue_ms", "failed_timeout", "output_throughput"} {
		assert.True(t, knownMetric(m), m)
	}
	for _, m := range []string{"p101_ttft_ms", "p-1_ttft_ms", "p99_ttft", "ttft", "p99_foo_ms", "mean_ttft_sec", ""} {
		assert.False(t, knownMetric(m), m)
	}
}

func TestVerdictMargin(t *testing.T) {
	cases := []struct {
		bound    string
		measured float64
		found    bool
		want     float64
	}{
		{"p99_ttft_ms <= 800", 600, true, 0.25},
		{"p99_ttft_ms <= 800", 1000, true, -0.25},
		{"goodput_ratio >= 0.8", 0.9, true, 0.125},
		{"goodput_ratio > 0.8", 0.6, true, -0.25},
		{"failed == 0", 0, true, math.Inf(1)},
		{"failed == 0", 2, true, math.NaN()},
		{"failed <= 0", 0, true, math.Inf(1)},
		{"p99_ttft_ms <= 800", 0, false, math.NaN()},
	}
	for _, c := range cases {
		b, err := parseBound(c.bound)
		require.NoError(t, err, c.bound)
		v := Verdict{Bound: b, Measured: c.measured, Found: c.found, Pass: c.found && b.Holds(c.measured)}
		got := v.Margin()
		if math.IsNaN(c.want) {
			assert.True(t, math.IsNaN(got), "%s with %v: got %v", c.bound, c.measured, got)
			continue
		}
		assert.InDelta(t, c.want, got, 1e-12, "%s with %v", c.bound, c.measured)
		if !math.IsInf(got, 0) {
			assert.Equal(t, v.Pass, got >= 0, "%s with %v: the sign is the verdict", c.bound, c.measured)
		}
	}
}

// TestStreamSLOs: a scenario may bound the time to first content token,
// reasoning tokens, tool calls and broken tool calls, and the bounds are
// checked against a real summary of reasoning records.
func TestStreamSLOs(t *testing.T) {
	sc, err := Parse("s.yaml", []byte("name: a\nbackend: openai-responses\nslo:\n  bounds: [\"p99_ttfc_ms <= 100\", \"mean_reasoning_tokens <= 50\", \"mean_tool_calls >= 1\", \"failed_broken_tool_call == 0\", \"broken_tool_call_ratio <= 0\"]\n"))
	require.NoError(t, err)
	ms := time.Millisecond
	recs := make([]metrics.Record, 4)
	for i := range recs {
		recs[i] = metrics.Record{Start: time.Duration(i) * ms, TTFT: 20 * ms, FirstReasoning: 20 * ms, FirstContent: time.Duration(60+20*i) * ms,
			Latency: 200 * ms, OutputTokens: 100, ReasoningTokens: 40, ContentTokens: 60, Success: true,
			ToolCalls: []metrics.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}}
	}
	s := metrics.Summarize(recs, time.Second, metrics.Options{})
	var got []bool
	require.Len(t, sc, 1)
	for _, v := range sc[0].SLO.Check(WithDerived(s.Value)) {
		require.True(t, v.Found, v.Bound.Metric)
		got = append(got, v.Pass)
	}
	// p99 of 60, 80, 100, 120 ms is 119.4 ms: over its bound.
	assert.Equal(t, []bool{false, true, true, true, true}, got)
}
