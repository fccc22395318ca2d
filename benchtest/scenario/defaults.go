package scenario

import (
	"math"
	"slices"
	"time"

	"github.com/servegate/servegate/benchtest/client"
)

// The defaults of every scenario key, in one place. docs/scenarios.md
// repeats this table; keep them together.
const (
	// DefaultKind is the target kind when none is written.
	DefaultKind = TargetSim
	// DefaultBackend is vLLM's default backend (completions).
	DefaultBackend = "openai"
	// DefaultDataset is vLLM's default dataset.
	DefaultDataset = "random"
	// DefaultNumPrompts is vLLM's default --num-prompts.
	DefaultNumPrompts = 1000
	// DefaultBurstiness makes arrivals a Poisson process.
	DefaultBurstiness = 1.0
	// DefaultStartTimeout bounds starting a target.
	DefaultStartTimeout = 10 * time.Minute
	// DefaultReadyTimeout is vLLM's --ready-check-timeout-sec.
	DefaultReadyTimeout = 600 * time.Second
	// DefaultTraceSpeed replays a trace in real time.
	DefaultTraceSpeed = 1.0
	// DefaultPercentile is vLLM's default --metric-percentiles.
	DefaultPercentile = 99.0
)

// DefaultRequestRate sends every request at once (vLLM's inf).
var DefaultRequestRate = math.Inf(1)

// DefaultPercentileMetrics is vLLM's default --percentile-metrics.
var DefaultPercentileMetrics = []string{"ttft", "tpot", "itl"}

// datasetDefaults are vLLM's per-dataset length defaults.
var datasetDefaults = map[string]Dataset{
	"random":            {InputLen: 1024, OutputLen: 128},
	"random-rerank":     {InputLen: 1024},
	"prefix_repetition": {PrefixLen: 256, SuffixLen: 256, NumPrefixes: 10, OutputLen: 128},
	"sonnet":            {InputLen: 550, OutputLen: 150, PrefixLen: 200},
	"custom":            {OutputLen: 256},
	"spec_bench":        {OutputLen: 256},
}

// applyDefaults fills every key that was not written. It runs before
// validation, which then sees the values the run will use.
func (sc *Scenario) applyDefaults() {
	p := sc.pos
	t := &sc.Target
	if t.Kind == "" {
		t.Kind = DefaultKind
	}
	if !p.has("target.start_timeout") {
		t.StartTimeout = Duration(DefaultStartTimeout)
	}
	if sc.Backend == "" {
		sc.Backend = DefaultBackend
	}
	if sc.Endpoint == "" {
		sc.Endpoint = client.DefaultEndpoint(sc.Backend)
	}

	d := &sc.Dataset
	if d.Name == "" {
		d.Name = DefaultDataset
	}
	if !p.has("dataset.num_prompts") {
		d.NumPrompts = DefaultNumPrompts
	}
	def := datasetDefaults[d.Name]
	fill := func(key string, v *int, dv int) {
		if !p.has("dataset." + key) {
			*v = dv
		}
	}
	fill("input_len", &d.InputLen, def.InputLen)
	fill("output_len", &d.OutputLen, def.OutputLen)
	fill("prefix_len", &d.PrefixLen, def.PrefixLen)
	fill("suffix_len", &d.SuffixLen, def.SuffixLen)
	fill("num_prefixes", &d.NumPrefixes, def.NumPrefixes)

	l := &sc.Load
	if !p.has("load.request_rate") {
		l.RequestRate = DefaultRequestRate
	}
	if !p.has("load.burstiness") {
		l.Burstiness = DefaultBurstiness
	}
	if l.ReadyTimeout == nil {
		rt := Duration(DefaultReadyTimeout)
		l.ReadyTimeout = &rt
	}
	if !p.has("load.trace_speed") {
		l.TraceSpeed = DefaultTraceSpeed
	}

	m := &sc.Metrics
	if !p.has("metrics.percentile_metrics") {
		m.PercentileMetrics = slices.Clone(DefaultPercentileMetrics)
	}
	if !p.has("metrics.percentiles") {
		m.Percentiles = []float64{DefaultPercentile}
	}
	sc.capacityDefaults()
}

// addSLOPercentiles adds to Metrics the percentiles and percentile metrics
// that SLO bounds name, so "p95_e2el_ms <= 900" is computed without being
// listed twice. It runs after validation.
func (sc *Scenario) addSLOPercentiles() {
	m := &sc.Metrics
	for _, b := range sc.SLO.Bounds {
		p, metric, ok := percentileOf(b.Metric)
		if !ok || !slices.Contains(percentileMetrics, metric) {
			continue
		}
		if !slices.Contains(m.Percentiles, p) {
			m.Percentiles = append(m.Percentiles, p)
		}
		if !slices.Contains(m.PercentileMetrics, metric) {
			m.PercentileMetrics = append(m.PercentileMetrics, metric)
		}
	}
}
