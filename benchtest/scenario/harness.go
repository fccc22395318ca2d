package scenario

import (
	"math"
	"strconv"
	"time"

	"github.com/servegate/servegate/internal/metrics"
)

// A Harness holds the limits on the load generator's own health. Past any
// of them the run is invalid: the generator fell behind (it sent late, ran
// out of CPU, or its goroutines waited to run), so its numbers say nothing
// about the server, and the server's SLOs are not judged. A limit of 0
// turns its check off.
type Harness struct {
	// MaxLatenessP99 bounds the 99th percentile of the engine's lateness:
	// how late it sent a request it was free to send (its time had come
	// and a concurrency slot was free). Default 50ms.
	MaxLatenessP99 Duration `yaml:"max_lateness_p99"`
	// MaxCPU bounds the load generator's CPU use over the run, as a
	// share of the CPUs it may run on (client_cpu_ratio). Default 0.9.
	MaxCPU float64 `yaml:"max_cpu"`
	// MaxSchedLatencyP99 bounds the 99th percentile of how long the
	// generator's goroutines (stream readers included) waited to run once
	// runnable; past it TTFT and ITL include the client's own delay.
	// Default 50ms.
	MaxSchedLatencyP99 Duration `yaml:"max_sched_latency_p99"`
	// Reruns is how many times an invalid run is run again before the
	// run counts as invalid: a moment of overload (a burst of other work
	// on the machine) then costs time, not a verdict. Default 2; 0 never
	// runs again.
	Reruns int `yaml:"reruns"`
}

// The harness defaults; docs/scenarios.md repeats them.
const (
	// DefaultMaxLatenessP99 is the default harness.max_lateness_p99.
	DefaultMaxLatenessP99 = Duration(50 * time.Millisecond)
	// DefaultMaxCPU is the default harness.max_cpu.
	DefaultMaxCPU = 0.9
	// DefaultMaxSchedLatencyP99 is the default harness.max_sched_latency_p99.
	DefaultMaxSchedLatencyP99 = Duration(50 * time.Millisecond)
	// DefaultReruns is the default harness.reruns.
	DefaultReruns = 2
	// MaxReruns bounds harness.reruns.
	MaxReruns = 10
)

// DefaultHarness is the harness of a scenario that writes none, and of
// `servegate bench --scenario`.
var DefaultHarness = Harness{
	MaxLatenessP99:     DefaultMaxLatenessP99,
	MaxCPU:             DefaultMaxCPU,
	MaxSchedLatencyP99: DefaultMaxSchedLatencyP99,
	Reruns:             DefaultReruns,
}

// Bounds are the harness limits as bounds on the health metrics
// (p99_lateness_ms, client_cpu_ratio, sched_latency_p99_ms), in that
// order; a limit of 0 gives none.
func (h Harness) Bounds() []Bound {
	var out []Bound
	ms := func(d Duration) float64 { return float64(d) / 1e6 }
	if h.MaxLatenessP99 > 0 {
		out = append(out, Bound{Metric: "p99_lateness_ms", Op: "<=", Value: ms(h.MaxLatenessP99)})
	}
	if h.MaxCPU > 0 {
		out = append(out, Bound{Metric: metrics.ClientCPURatio, Op: "<=", Value: h.MaxCPU})
	}
	if h.MaxSchedLatencyP99 > 0 {
		out = append(out, Bound{Metric: metrics.SchedLatencyP99MS, Op: "<=", Value: ms(h.MaxSchedLatencyP99)})
	}
	return out
}

// Check evaluates the harness limits with lookup, like SLO.Check; every
// verdict is marked Harness. A figure that was not measured fails its
// limit: a run whose health is unknown is not valid.
func (h Harness) Check(lookup func(name string) (float64, bool)) []Verdict {
	vs := SLO{Bounds: h.Bounds()}.Check(lookup)
	for i := range vs {
		vs[i].Harness = true
	}
	return vs
}

// applyHarnessDefaults fills the harness limits that were not written.
func (sc *Scenario) applyHarnessDefaults() {
	h, p := &sc.Harness, sc.pos
	if !p.has("harness.max_lateness_p99") {
		h.MaxLatenessP99 = DefaultHarness.MaxLatenessP99
	}
	if !p.has("harness.max_cpu") {
		h.MaxCPU = DefaultHarness.MaxCPU
	}
	if !p.has("harness.max_sched_latency_p99") {
		h.MaxSchedLatencyP99 = DefaultHarness.MaxSchedLatencyP99
	}
	if !p.has("harness.reruns") {
		h.Reruns = DefaultHarness.Reruns
	}
}

func (sc *Scenario) validateHarness() error {
	h := sc.Harness
	for _, d := range []struct {
		key string
		v   Duration
	}{{"max_lateness_p99", h.MaxLatenessP99}, {"max_sched_latency_p99", h.MaxSchedLatencyP99}} {
		if d.v < 0 {
			return sc.errorf("harness."+d.key, "must not be negative (0 turns the check off), got %s", d.v.D())
		}
	}
	if h.Reruns < 0 || h.Reruns > MaxReruns {
		return sc.errorf("harness.reruns", "must be in [0, %d], got %d", MaxReruns, h.Reruns)
	}
	if math.IsNaN(h.MaxCPU) || h.MaxCPU < 0 || h.MaxCPU > 1 {
		return sc.errorf("harness.max_cpu", "must be a share of the CPUs in [0, 1] (0 turns the check off), got %s", strconv.FormatFloat(h.MaxCPU, 'g', -1, 64))
	}
	return nil
}
