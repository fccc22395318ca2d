package scenario

import (
	"math"
	"slices"
	"time"

	"github.com/servegate/servegate/internal/client"
)

// The defaults of every scenario key, in one place. docs/scenarios.md
// repeats this table; keep them together.
const (
	// defaultKind is the target kind when none is written.
	defaultKind = TargetSim
	// defaultBackend is vLLM's default backend (completions).
	defaultBackend = "openai"
	// defaultDataset is vLLM's default dataset.
	defaultDataset = "random"
	// defaultNumPrompts is vLLM's default --num-prompts.
	defaultNumPrompts = 1000
	// defaultBurstiness makes arrivals a Poisson process.
	defaultBurstiness = 1.0
	// DefaultStartTimeout bounds starting a target.
	DefaultStartTimeout = 10 * time.Minute
	// defaultReadyTimeout is vLLM's --ready-check-timeout-sec.
	defaultReadyTimeout = 600 * time.Second
	// defaultWarmConnections opens the run's connections before it starts.
	defaultWarmConnections = true
	// defaultTraceSpeed replays a trace in real time.
	defaultTraceSpeed = 1.0
	// defaultPercentile is vLLM's default --metric-percentiles.
	defaultPercentile = 99.0
)

// defaultRequestRate sends every request at once (vLLM's inf).
var defaultRequestRate = math.Inf(1)

// defaultPercentileMetrics is vLLM's default --percentile-metrics.
var defaultPercentileMetrics = []string{"ttft", "tpot", "itl"}

// datasetDefaults are vLLM's per-dataset length defaults.
var datasetDefaults = map[string]Dataset{
	"random":            {InputLen: 1024, OutputLen: 128},
	"random-rerank":     {InputLen: 1024},
	"prefix_repetition": {PrefixLen: 256, SuffixLen: 256, NumPrefixes: 10, OutputLen: 128},
	"sonnet":            {InputLen: 550, OutputLen: 150, PrefixLen: 200},
	"custom":            {OutputLen: 256},
	"spec_bench":        {OutputLen: 256},
	"txt-slices":        {InputLen: 1024, OutputLen: 128},
}

// applyDefaults fills every key that was not written. It runs before
// validation, which then sees the values the run will use.
func (sc *Scenario) applyDefaults() {
	p := sc.pos
	t := &sc.Target
	if t.Kind == "" {
		t.Kind = defaultKind
	}
	if !p.has("target.start_timeout") {
		t.StartTimeout = Duration(DefaultStartTimeout)
	}
	if sc.Backend == "" {
		sc.Backend = defaultBackend
	}
	if sc.Endpoint == "" {
		sc.Endpoint = client.DefaultEndpoint(sc.Backend)
	}

	d := &sc.Dataset
	if d.Name == "" {
		d.Name = defaultDataset
	}
	if !p.has("dataset.num_prompts") {
		d.NumPrompts = defaultNumPrompts
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
		l.RequestRate = defaultRequestRate
	}
	if !p.has("load.burstiness") {
		l.Burstiness = defaultBurstiness
	}
	if l.ReadyTimeout == nil {
		rt := Duration(defaultReadyTimeout)
		l.ReadyTimeout = &rt
	}
	if l.WarmConnections == nil {
		warm := defaultWarmConnections
		l.WarmConnections = &warm
	}
	if !p.has("load.trace_speed") {
		l.TraceSpeed = defaultTraceSpeed
	}

	sc.applyHarnessDefaults()

	m := &sc.Metrics
	if !p.has("metrics.percentile_metrics") {
		m.PercentileMetrics = slices.Clone(defaultPercentileMetrics)
	}
	if !p.has("metrics.percentiles") {
		m.Percentiles = []float64{defaultPercentile}
	}
	sc.capacityDefaults()
	sc.sessionDefaults()
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
