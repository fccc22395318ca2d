package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/metrics"
)

func TestGoodputMargin(t *testing.T) {
	ms := time.Millisecond
	rec := func(ttft time.Duration) metrics.Record {
		return metrics.Record{Success: true, TTFT: ttft, Latency: ttft + 150*ms, OutputTokens: 16}
	}
	// TTFTs 50, 100, 150, 250 ms against a 200 ms SLO: slacks 0.75, 0.5,
	// 0.25, −0.25; a failed request does not count, as in goodput_ratio.
	records := []metrics.Record{rec(250 * ms), rec(50 * ms), rec(150 * ms), rec(100 * ms), {Success: false}}
	slo := map[string]float64{"ttft": 200}
	cases := []struct {
		op    string
		ratio float64
		want  float64
	}{
		{">=", 0.5, 0.5},   // 2 good requests needed: the 2nd best slack
		{">=", 0.75, 0.25}, // 3 needed
		{">", 0.5, 0.25},   // 3 needed
		{">=", 0.95, -0.25},
		{">=", 0.1, 0.75},
	}
	for _, c := range cases {
		b := scenario.Bound{Metric: "goodput_ratio", Op: c.op, Value: c.ratio}
		got, ok := goodputMargin(b, slo, records)
		assert.True(t, ok, b.String())
		assert.InDelta(t, c.want, got, 1e-9, b.String())
		assert.Equal(t, b.Holds(3.0/4), got >= 0, "%s: the sign is the verdict (3 of 4 good)", b)
	}
	// The tightest of several SLOs decides a request's slack: e2el 400 ms
	// is 200, 250, 300, 400 ms into its budget.
	got, ok := goodputMargin(scenario.Bound{Metric: "goodput_ratio", Op: ">=", Value: 0.5}, map[string]float64{"ttft": 1000, "e2el": 400}, records)
	assert.True(t, ok)
	assert.InDelta(t, 0.375, got, 1e-9) // e2els 400, 200, 300, 250: slacks 0, .5, .25, .375
	for _, c := range []struct {
		name string
		b    scenario.Bound
		slo  map[string]float64
		recs []metrics.Record
	}{
		{"another metric", scenario.Bound{Metric: "request_goodput", Op: ">=", Value: 1}, slo, records},
		{"an upper bound", scenario.Bound{Metric: "goodput_ratio", Op: "<=", Value: 0.5}, slo, records},
		{"no goodput SLOs", scenario.Bound{Metric: "goodput_ratio", Op: ">=", Value: 0.5}, nil, records},
		{"no requests", scenario.Bound{Metric: "goodput_ratio", Op: ">=", Value: 0.5}, slo, nil},
		{"never holds", scenario.Bound{Metric: "goodput_ratio", Op: ">", Value: 1}, slo, records},
	} {
		_, ok := goodputMargin(c.b, c.slo, c.recs)
		assert.False(t, ok, c.name)
	}
}
