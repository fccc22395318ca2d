package pipeline

import (
	"math"
	"slices"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/metrics"
)

// goodputMargin is the margin of a bound "goodput_ratio >= q" (or > q)
// measured on records against the goodput SLOs slo (ms, keyed ttft, tpot,
// e2el): the slack of the request that decides the bound. A request's
// slack is how far inside its tightest SLO it finished, (limit − value) /
// limit; a run of n requests holds the bound when its k best requests
// are good, k the fewest good requests that make the ratio hold, so the
// margin is the k-th largest slack. It is ≥ 0 exactly when the bound
// holds, and it moves with the latencies on both sides of the edge,
// while the ratio itself sits at 1 until the edge is near. ok is false
// when the bound or the records give no such margin.
func goodputMargin(b scenario.Bound, slo map[string]float64, records []metrics.Record) (float64, bool) {
	if b.Metric != "goodput_ratio" || (b.Op != ">=" && b.Op != ">") || len(slo) == 0 {
		return 0, false
	}
	var slacks []float64
	for i := range records {
		r := &records[i]
		if r.Unsent || !r.Success {
			continue
		}
		s := math.Inf(1)
		for name, v := range map[string]float64{"ttft": r.TTFT.Seconds(), "tpot": r.TPOTSeconds(), "e2el": r.Latency.Seconds()} {
			if limit, ok := slo[name]; ok && limit > 0 {
				s = math.Min(s, (limit/1000-v)/(limit/1000))
			}
		}
		slacks = append(slacks, s)
	}
	n := len(slacks)
	if n == 0 {
		return 0, false
	}
	k := 1
	for k <= n && !b.Holds(float64(k)/float64(n)) {
		k++
	}
	if k > n || math.IsInf(slacks[0], 1) {
		return 0, false
	}
	slices.Sort(slacks)
	return slacks[n-k], true
}
