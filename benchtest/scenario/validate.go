package scenario

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/limit"
	"github.com/servegate/servegate/internal/redact"
)

var (
	targetKinds       = TargetKinds
	rampStrategies    = []string{"linear", "exponential"}
	percentileMetrics = []string{"ttft", "tpot", "itl", "e2el"}
	goodputMetrics    = []string{"ttft", "tpot", "e2el"}
	namePattern       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// maxNameLen is the longest scenario name. The name goes into file
// names, which Linux caps at 255 bytes, and into every request's
// x-request-id header.
const maxNameLen = 128

// goodputDependent are the metrics that exist only with slo.goodput.
var goodputDependent = []string{"request_goodput", "goodput_ratio"}

// validate checks every value the run will use (defaults applied) and
// returns the first problem, naming file, line and field.
func (sc *Scenario) validate() error {
	checks := []func() error{sc.validateTarget, sc.validateRequest, sc.validateSessions, sc.validateDataset, sc.validateLoad, sc.validateSampling, sc.validateSLO, sc.validateLimits, sc.validateServerMetrics, sc.validateCapacity, sc.validateHarness}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

func (sc *Scenario) errorf(field, format string, args ...any) error {
	return &Error{File: sc.File, Line: sc.pos.line(field), Field: field, Msg: fmt.Sprintf(format, args...)}
}

func oneOf(list []string) string { return strings.Join(list, ", ") }

func (sc *Scenario) validateTarget() error {
	if sc.Name == "" {
		return sc.errorf("name", "required")
	}
	if !namePattern.MatchString(sc.Name) {
		return sc.errorf("name", "%q: use letters, digits, '.', '_' and '-' only, starting with a letter or digit", sc.Name)
	}
	if len(sc.Name) > maxNameLen {
		return sc.errorf("name", "%d characters is over the maximum %d: the name goes into file names and every request's id", len(sc.Name), maxNameLen)
	}
	t := sc.Target
	if !slices.Contains(targetKinds, t.Kind) {
		return sc.errorf("target.kind", "must be one of %s; got %q", oneOf(targetKinds), t.Kind)
	}
	switch t.Kind {
	case TargetURL:
		if t.URL == "" {
			return sc.errorf("target.url", "required when target.kind is url (or set SERVEGATE_URL)")
		}
		u, err := url.Parse(t.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return sc.errorf("target.url", "want http://host:port, got %q", redact.String(t.URL))
		}
	case TargetContainer:
		if err := sc.validateContainer(); err != nil {
			return err
		}
	}
	if t.Kind != TargetContainer {
		for key, set := range map[string]bool{"target.build": t.Build != nil, "target.port": t.Port != 0, "target.cmd": len(t.Cmd) > 0, "target.wait": t.Wait != nil, "target.backends": len(t.Backends) > 0} {
			if set {
				return sc.errorf(key, "only for target.kind container; this target is %s", t.Kind)
			}
		}
	}
	if t.URL != "" && t.Kind != TargetURL {
		return sc.errorf("target.url", "only for target.kind url; this target is %s", t.Kind)
	}
	if t.Kind == TargetSim || t.Kind == TargetInproc {
		if err := sc.validateSimArgs("target.args", t.Args); err != nil {
			return err
		}
	}
	if t.Profile != "" && t.Kind != TargetSim && t.Kind != TargetInproc {
		return sc.errorf("target.profile", "a simulator profile needs target.kind sim or inproc; this target is %s", t.Kind)
	}
	if !t.GPUs.None() && t.Kind != TargetVLLM && t.Kind != TargetContainer {
		return sc.errorf("target.gpus", "only for target.kind vllm or container; this target is %s", t.Kind)
	}
	if t.StartTimeout < 0 {
		return sc.errorf("target.start_timeout", "must not be negative, got %s", t.StartTimeout.D())
	}
	return nil
}

// maxBackendReplicas bounds target.backends[].replicas, so that a typo
// cannot start hundreds of containers.
const maxBackendReplicas = 16

// validateContainer checks a container target: an image or a build, a
// port, a wait and simulator backends.
func (sc *Scenario) validateContainer() error {
	t := sc.Target
	if (t.Image == "") == (t.Build == nil) {
		return sc.errorf("target.image", "a container target needs target.image or target.build, not both")
	}
	if t.Build != nil && t.Build.Context == "" {
		return sc.errorf("target.build.context", "required: the build context directory")
	}
	if t.Port < 0 || t.Port > 65535 {
		return sc.errorf("target.port", "must be a port number, 1 to 65535; got %d", t.Port)
	}
	if w := t.Wait; w != nil {
		if w.Path != "" && !strings.HasPrefix(w.Path, "/") {
			return sc.errorf("target.wait.path", "must start with /, got %q", w.Path)
		}
		if w.Timeout < 0 || w.Timeout.D() > engine.MaxTimeout {
			return sc.errorf("target.wait.timeout", "must be between 0 and %v, got %v", engine.MaxTimeout, w.Timeout.D())
		}
	}
	for i, b := range t.Backends {
		key := fmt.Sprintf("target.backends[%d]", i)
		if b.Kind != "" && b.Kind != TargetSim {
			return sc.errorf(key+".kind", "must be sim (the simulator); got %q", b.Kind)
		}
		if b.Replicas < 0 || b.Replicas > maxBackendReplicas {
			return sc.errorf(key+".replicas", "must be 1 to %d, got %d", maxBackendReplicas, b.Replicas)
		}
		if _, err := (Target{Args: b.Args}).SimKnobs(); err != nil {
			return sc.errorf(key+".args", "%v", err)
		}
		if err := sc.validateSimArgs(key+".args", b.Args); err != nil {
			return err
		}
	}
	return nil
}

func (sc *Scenario) validateRequest() error {
	if !slices.Contains(client.Backends, sc.Backend) {
		return sc.errorf("backend", "must be one of %s; got %q", oneOf(client.Backends), sc.Backend)
	}
	if !strings.HasPrefix(sc.Endpoint, "/") {
		return sc.errorf("endpoint", "must be a path starting with /, got %q", sc.Endpoint)
	}
	for k := range sc.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return sc.errorf("headers."+k, "%q is not a header name", k)
		}
	}
	return nil
}

func (sc *Scenario) validateDataset() error {
	d := sc.Dataset
	if !slices.Contains(dataset.Names, d.Name) {
		return sc.errorf("dataset.name", "must be one of %s; got %q", oneOf(dataset.Names), d.Name)
	}
	if dataset.NeedsPath(d.Name) && d.Path == "" {
		return sc.errorf("dataset.path", "required for the %s dataset", d.Name)
	}
	if d.NumPrompts < 1 {
		return sc.errorf("dataset.num_prompts", "must be at least 1, got %d", d.NumPrompts)
	}
	lens := []struct {
		key string
		v   int
		min int
	}{
		{"input_len", d.InputLen, 0}, {"output_len", d.OutputLen, 0}, {"prefix_len", d.PrefixLen, 0},
		{"suffix_len", d.SuffixLen, 0}, {"num_prefixes", d.NumPrefixes, 0},
	}
	for _, l := range lens {
		if l.v < l.min {
			return sc.errorf("dataset."+l.key, "must not be negative, got %d", l.v)
		}
	}
	switch d.Name {
	case "random":
		if d.InputLen < 1 && d.PrefixLen < 1 {
			return sc.errorf("dataset.input_len", "must be at least 1 (or set prefix_len), got %d", d.InputLen)
		}
		if d.OutputLen < 1 {
			return sc.errorf("dataset.output_len", "must be at least 1, got %d", d.OutputLen)
		}
	case "prefix_repetition":
		if d.NumPrefixes < 1 {
			return sc.errorf("dataset.num_prefixes", "must be at least 1, got %d", d.NumPrefixes)
		}
		if d.OutputLen < 1 {
			return sc.errorf("dataset.output_len", "must be at least 1, got %d", d.OutputLen)
		}
	}
	if d.RangeRatio < 0 || d.RangeRatio >= 1 {
		return sc.errorf("dataset.range_ratio", "must be in [0, 1), got %v", d.RangeRatio)
	}
	return nil
}

func (sc *Scenario) validateLoad() error {
	l := sc.Load
	if math.IsNaN(l.RequestRate) || l.RequestRate <= 0 {
		return sc.errorf("load.request_rate", "must be a positive rate in requests/s (or inf for all at once), got %v", l.RequestRate)
	}
	if math.IsNaN(l.Burstiness) || l.Burstiness <= 0 {
		return sc.errorf("load.burstiness", "must be positive (1 is Poisson, below 1 burstier, inf constant gaps), got %v", l.Burstiness)
	}
	if r := l.RampUp; r != nil {
		if sc.pos.has("load.request_rate") {
			return sc.errorf("load.ramp_up", "cannot be combined with load.request_rate: the ramp-up sets the rate; remove one of them")
		}
		if !slices.Contains(rampStrategies, r.Strategy) {
			return sc.errorf("load.ramp_up.strategy", "must be one of %s; got %q", oneOf(rampStrategies), r.Strategy)
		}
		for _, k := range []string{"start_rps", "end_rps"} {
			if !sc.pos.has("load.ramp_up." + k) {
				return sc.errorf("load.ramp_up."+k, "required with a ramp-up")
			}
		}
		if r.StartRPS < 0 || r.EndRPS < 0 || math.IsInf(r.EndRPS, 0) || math.IsNaN(r.StartRPS) || math.IsNaN(r.EndRPS) {
			return sc.errorf("load.ramp_up", "start_rps and end_rps must be finite and non-negative, got %v and %v", r.StartRPS, r.EndRPS)
		}
		if r.StartRPS > r.EndRPS {
			return sc.errorf("load.ramp_up.start_rps", "must not exceed end_rps (%v > %v)", r.StartRPS, r.EndRPS)
		}
		if r.Strategy == "exponential" && r.StartRPS == 0 {
			return sc.errorf("load.ramp_up.start_rps", "must be positive for an exponential ramp-up")
		}
	}
	ints := []struct {
		key string
		v   int
	}{{"max_concurrency", l.MaxConcurrency}, {"warmups", l.Warmups}}
	for _, i := range ints {
		if i.v < 0 {
			return sc.errorf("load."+i.key, "must not be negative, got %d", i.v)
		}
	}
	durs := []struct {
		key string
		v   Duration
	}{{"max_duration", l.MaxDuration}, {"request_timeout", l.RequestTimeout}, {"ready_timeout", *l.ReadyTimeout}}
	for _, d := range durs {
		if d.v < 0 {
			return sc.errorf("load."+d.key, "must not be negative, got %s", d.v.D())
		}
	}
	if l.TraceReplay {
		if !dataset.ReplaysTraces(sc.Dataset.Name) {
			return sc.errorf("load.trace_replay", "needs a dataset with arrival times (%s, %s); %s has none", dataset.BurstGPT, dataset.Custom, sc.Dataset.Name)
		}
		if sc.pos.has("load.request_rate") || l.RampUp != nil {
			return sc.errorf("load.trace_replay", "cannot be combined with load.request_rate or load.ramp_up: the trace sets the arrivals")
		}
	}
	if math.IsNaN(l.TraceSpeed) || l.TraceSpeed <= 0 || math.IsInf(l.TraceSpeed, 0) {
		return sc.errorf("load.trace_speed", "must be a positive finite factor, got %v", l.TraceSpeed)
	}
	return nil
}

func (sc *Scenario) validateSampling() error {
	s := sc.Sampling
	if s.Temperature != nil && *s.Temperature < 0 {
		return sc.errorf("sampling.temperature", "must not be negative, got %v", *s.Temperature)
	}
	if s.TopP != nil && (*s.TopP <= 0 || *s.TopP > 1) {
		return sc.errorf("sampling.top_p", "must be in (0, 1], got %v", *s.TopP)
	}
	if s.TopK != nil && *s.TopK < -1 {
		return sc.errorf("sampling.top_k", "must be -1 (disabled) or more, got %d", *s.TopK)
	}
	if s.MinP != nil && (*s.MinP < 0 || *s.MinP > 1) {
		return sc.errorf("sampling.min_p", "must be in [0, 1], got %v", *s.MinP)
	}
	if s.RepetitionPenalty != nil && *s.RepetitionPenalty <= 0 {
		return sc.errorf("sampling.repetition_penalty", "must be positive, got %v", *s.RepetitionPenalty)
	}
	return nil
}

func (sc *Scenario) validateSLO() error {
	m := sc.Metrics
	for i, pm := range m.PercentileMetrics {
		if !slices.Contains(percentileMetrics, pm) {
			return sc.errorf(fmt.Sprintf("metrics.percentile_metrics[%d]", i), "must be one of %s; got %q", oneOf(percentileMetrics), pm)
		}
	}
	for i, p := range m.Percentiles {
		if err := checkPercentile(p); err != nil {
			return sc.errorf(fmt.Sprintf("metrics.percentiles[%d]", i), "%v", err)
		}
	}
	for k, v := range sc.SLO.Goodput {
		if !slices.Contains(goodputMetrics, k) {
			return sc.errorf("slo.goodput."+k, "unknown goodput metric; must be one of %s (milliseconds)", oneOf(goodputMetrics))
		}
		if v < 0 || math.IsNaN(v) {
			return sc.errorf("slo.goodput."+k, "must not be negative, got %v", v)
		}
	}
	for i, b := range sc.SLO.Bounds {
		field := fmt.Sprintf("slo.bounds[%d]", i)
		if p, metric, ok := percentileOf(b.Metric); ok && slices.Contains(percentileMetrics, metric) {
			if err := checkPercentile(p); err != nil {
				return sc.errorf(field, "%s: %v", b.Metric, err)
			}
		}
		if !knownMetric(b.Metric) {
			return sc.errorf(field, "unknown metric %q (docs/scenarios.md lists the metrics)", b.Metric)
		}
		if slices.Contains(goodputDependent, b.Metric) && len(sc.SLO.Goodput) == 0 {
			return sc.errorf(field, "%s needs slo.goodput (the ttft/tpot/e2el limits that make a request good)", b.Metric)
		}
	}
	return nil
}

func checkPercentile(p float64) error {
	if math.IsNaN(p) || p < 0 || p > 100 {
		return fmt.Errorf("percentile must be in [0, 100], got %v", p)
	}
	return nil
}

// Limits on sampling values, which only the server uses: wide enough for
// any server, narrow enough to catch a typing slip.
const (
	maxTemperature = 100
	maxPenalty     = 100
	maxTopK        = dataset.MaxLen
	maxGoodputMs   = float64(engine.MaxTimeout / time.Millisecond)
)

// numLimits checks every numeric key with a maximum; docs/scenarios.md
// lists them all (TestDocsListEveryLimit). Keys with only a range
// (percentiles, range_ratio, top_p, min_p) or no bound by nature (rates,
// seed) are checked elsewhere.
func (sc *Scenario) numLimits() []limit.Check {
	d, l, s := sc.Dataset, sc.Load, sc.Sampling
	var topK int
	if s.TopK != nil {
		topK = *s.TopK
	}
	ready := Duration(0)
	if l.ReadyTimeout != nil {
		ready = *l.ReadyTimeout
	}
	checks := []limit.Check{
		limit.Duration("target.start_timeout", sc.Target.StartTimeout.D(), engine.MaxTimeout),
		limit.Int("dataset.num_prompts", d.NumPrompts, dataset.MaxNumPrompts),
		limit.Int("dataset.input_len", d.InputLen, dataset.MaxLen),
		limit.Int("dataset.output_len", d.OutputLen, dataset.MaxLen),
		limit.Int("dataset.prefix_len", d.PrefixLen, dataset.MaxLen),
		limit.Int("dataset.suffix_len", d.SuffixLen, dataset.MaxLen),
		limit.Int("dataset.num_prefixes", d.NumPrefixes, dataset.MaxNumPrefixes),
		limit.Int("load.max_concurrency", l.MaxConcurrency, engine.MaxConcurrencyLimit),
		limit.Int("load.warmups", l.Warmups, engine.MaxWarmups),
		limit.Int("load.max_line_bytes", l.MaxLineBytes, client.MaxLineBytesLimit),
		limit.Duration("load.max_duration", l.MaxDuration.D(), engine.MaxTimeout),
		limit.Duration("load.request_timeout", l.RequestTimeout.D(), engine.MaxTimeout),
		limit.Duration("load.ready_timeout", ready.D(), engine.MaxTimeout),
		limit.Float("sampling.temperature", s.Temperature, maxTemperature),
		limit.Int("sampling.top_k", topK, maxTopK),
		limit.Float("sampling.repetition_penalty", s.RepetitionPenalty, maxPenalty),
		limit.Float("sampling.frequency_penalty", s.FrequencyPenalty, 2),
		limit.Float("sampling.presence_penalty", s.PresencePenalty, 2),
	}
	checks = append(checks, sc.serverAndCapacityLimits()...)
	checks = append(checks, sc.sessionLimits()...)
	for _, k := range goodputMetrics {
		var v *float64
		if x, ok := sc.SLO.Goodput[k]; ok {
			v = &x
		}
		checks = append(checks, limit.Float("slo.goodput."+k, v, maxGoodputMs))
	}
	return checks
}

// validateLimits checks every numeric key against its limit, and the
// dataset's total prompt tokens against dataset.MaxTotalTokens.
func (sc *Scenario) validateLimits() error {
	if c, over := limit.FirstOver(sc.numLimits()); over {
		return sc.errorf(c.Name, "%s is over the maximum %s", c.Value, c.Max)
	}
	pens := []struct {
		key string
		v   *float64
	}{{"sampling.frequency_penalty", sc.Sampling.FrequencyPenalty}, {"sampling.presence_penalty", sc.Sampling.PresencePenalty}}
	for _, p := range pens {
		if p.v != nil && !(*p.v >= -2) {
			return sc.errorf(p.key, "must be in [-2, 2], got %v", *p.v)
		}
	}
	for i, b := range sc.SLO.Bounds {
		if math.IsInf(b.Value, 0) {
			return sc.errorf(fmt.Sprintf("slo.bounds[%d]", i), "bound %v must be a finite number", b.Value)
		}
	}
	d := sc.Dataset
	per := 0
	switch d.Name {
	case "random", "random-rerank":
		per = int(float64(d.InputLen)*(1+d.RangeRatio)) + 1 + d.PrefixLen
	case "prefix_repetition":
		per = d.PrefixLen + d.SuffixLen
	}
	if total := d.NumPrompts * per; total > dataset.MaxTotalTokens {
		return sc.errorf("dataset.num_prompts", "%d prompts of up to %d tokens are %d prompt tokens, over the maximum %d; lower num_prompts or input_len", d.NumPrompts, per, total, dataset.MaxTotalTokens)
	}
	return nil
}
