// Package servermetrics scrapes a vLLM-compatible server's Prometheus
// endpoint (/metrics) during a benchmark run and summarises what the
// server saw: prefix-cache hits, preemptions, KV-cache use, queue depth,
// tokens, and its own latency histograms. The simulator exports the same
// metric names as vLLM v0.13, so one reader serves both.
//
// The exposition is parsed with github.com/prometheus/common/expfmt; the
// package only picks the families it needs out of the parsed result.
package servermetrics

import (
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// vLLM's metric names (v0.13), without the _total suffix of counters.
const (
	PrefixCacheQueries = "vllm:prefix_cache_queries"
	PrefixCacheHits    = "vllm:prefix_cache_hits"
	NumPreemptions     = "vllm:num_preemptions"
	PromptTokens       = "vllm:prompt_tokens"
	GenerationTokens   = "vllm:generation_tokens"
	KVCacheUsage       = "vllm:kv_cache_usage_perc"
	RequestsWaiting    = "vllm:num_requests_waiting"
	RequestsRunning    = "vllm:num_requests_running"
	TTFTSeconds        = "vllm:time_to_first_token_seconds"
	QueueTimeSeconds   = "vllm:request_queue_time_seconds"
	E2ELatencySeconds  = "vllm:e2e_request_latency_seconds"
	// The speculative decoding counters (vllm/v1/spec_decode/metrics.py),
	// exported only by a server with a speculative config.
	SpecDecodeDrafts         = "vllm:spec_decode_num_drafts"
	SpecDecodeDraftTokens    = "vllm:spec_decode_num_draft_tokens"
	SpecDecodeAcceptedTokens = "vllm:spec_decode_num_accepted_tokens"
)

// counters and gauges are the scalar families a Snapshot keeps.
var (
	counters = []string{PrefixCacheQueries, PrefixCacheHits, NumPreemptions, PromptTokens, GenerationTokens}
	// specCounters are counters only a server with speculative decoding
	// exports.
	specCounters = []string{SpecDecodeDrafts, SpecDecodeDraftTokens, SpecDecodeAcceptedTokens}
	gauges       = []string{KVCacheUsage, RequestsWaiting, RequestsRunning}
	hists        = []string{TTFTSeconds, QueueTimeSeconds, E2ELatencySeconds}
	// infos are the info families: gauges at 1 whose labels state the
	// server's configuration.
	infos = []string{CacheConfigInfo, SimInfo}
)

// The info families a Snapshot keeps the labels of.
const (
	// CacheConfigInfo is vLLM's KV-cache configuration (block_size,
	// num_gpu_blocks, enable_prefix_caching, ...), from
	// vllm/v1/metrics/loggers.py's log_metrics_info.
	CacheConfigInfo = "vllm:cache_config_info"
	// SimInfo is exported by servegate's simulator alone: the server is a
	// twin, not a real server.
	SimInfo = "servegate:sim_info"
)

// A Snapshot is one scrape: the values of the families servegate reads,
// each summed over its series (engines, models), except the KV-cache usage,
// a fraction, which takes the largest engine's.
type Snapshot struct {
	// At is when the scrape's answer arrived.
	At time.Time
	// Values holds counters (by name without _total) and gauges; a family
	// the server does not export is absent.
	Values map[string]float64
	// Histograms holds the latency histograms, cumulative since the server
	// started.
	Histograms map[string]Histogram
	// Info holds the labels of the info families the server exports, by
	// family name (the first series of each).
	Info map[string]map[string]string
}

// A Histogram is a Prometheus histogram: cumulative counts by upper bound,
// ascending, the last bound +Inf.
type Histogram struct {
	Bounds []float64
	Counts []float64
	// Count and Sum are the observations and their sum.
	Count, Sum float64
}

// newSnapshot picks servegate's families out of a parsed exposition.
func newSnapshot(at time.Time, fams map[string]*dto.MetricFamily) Snapshot {
	s := Snapshot{At: at, Values: map[string]float64{}, Histograms: map[string]Histogram{}}
	for _, name := range append(counters[:len(counters):len(counters)], specCounters...) {
		if f := family(fams, name, name+"_total"); f != nil {
			s.Values[name] = sumSeries(f, func(m *dto.Metric) float64 {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetUntyped().GetValue()
			}, false)
		}
	}
	for _, name := range gauges {
		if f := family(fams, name); f != nil {
			s.Values[name] = sumSeries(f, func(m *dto.Metric) float64 {
				if g := m.GetGauge(); g != nil {
					return g.GetValue()
				}
				return m.GetUntyped().GetValue()
			}, name == KVCacheUsage)
		}
	}
	for _, name := range hists {
		if f := family(fams, name); f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
			if h, ok := mergeHistograms(f); ok {
				s.Histograms[name] = h
			}
		}
	}
	for _, name := range infos {
		if f := family(fams, name); f != nil && len(f.GetMetric()) > 0 {
			labels := map[string]string{}
			for _, lp := range f.GetMetric()[0].GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if s.Info == nil {
				s.Info = map[string]map[string]string{}
			}
			s.Info[name] = labels
		}
	}
	return s
}

// family returns the first of names that fams holds.
func family(fams map[string]*dto.MetricFamily, names ...string) *dto.MetricFamily {
	for _, n := range names {
		if f, ok := fams[n]; ok {
			return f
		}
	}
	return nil
}

// sumSeries adds (or, with takeMax, takes the largest of) the values of a
// family's series; NaN values are skipped.
func sumSeries(f *dto.MetricFamily, value func(*dto.Metric) float64, takeMax bool) float64 {
	var out float64
	for _, m := range f.GetMetric() {
		v := value(m)
		if math.IsNaN(v) {
			continue
		}
		if takeMax {
			out = math.Max(out, v)
		} else {
			out += v
		}
	}
	return out
}

// mergeHistograms adds the series of a histogram family. Series whose
// bounds differ from the first's are left out (vLLM declares one set of
// bounds per family).
func mergeHistograms(f *dto.MetricFamily) (Histogram, bool) {
	var out Histogram
	for i, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		bounds, counts := bucketsOf(h)
		if i == 0 || out.Bounds == nil {
			out = Histogram{Bounds: bounds, Counts: counts}
		} else if !equalBounds(out.Bounds, bounds) {
			continue
		} else {
			for j := range counts {
				out.Counts[j] += counts[j]
			}
		}
		out.Count += count(h)
		out.Sum += h.GetSampleSum()
	}
	return out, out.Bounds != nil
}

// bucketsOf returns a histogram's bounds and cumulative counts, with the
// +Inf bucket (which the text format's parser folds into the count)
// appended when missing.
func bucketsOf(h *dto.Histogram) (bounds, counts []float64) {
	for _, b := range h.GetBucket() {
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		bounds = append(bounds, b.GetUpperBound())
		counts = append(counts, c)
	}
	if len(bounds) == 0 || !math.IsInf(bounds[len(bounds)-1], 1) {
		bounds = append(bounds, math.Inf(1))
		counts = append(counts, count(h))
	}
	return bounds, counts
}

func count(h *dto.Histogram) float64 {
	if h.SampleCountFloat != nil {
		return h.GetSampleCountFloat()
	}
	return float64(h.GetSampleCount())
}

func equalBounds(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Sub returns h - base, bucket by bucket: the observations made between
// two scrapes. ok is false when the bounds differ or a count went down
// (the server restarted in between).
func (h Histogram) Sub(base Histogram) (Histogram, bool) {
	if base.Bounds == nil {
		return h, true
	}
	if !equalBounds(h.Bounds, base.Bounds) || h.Count < base.Count {
		return Histogram{}, false
	}
	out := Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Count: h.Count - base.Count, Sum: h.Sum - base.Sum}
	for i := range h.Counts {
		out.Counts[i] = h.Counts[i] - base.Counts[i]
		if out.Counts[i] < 0 {
			return Histogram{}, false
		}
	}
	return out, true
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) the way Prometheus's
// histogram_quantile does: find the bucket the rank falls in and
// interpolate linearly between its lower and upper bound (the first
// bucket's lower bound is 0). A rank in the +Inf bucket returns the
// largest finite bound. It is an estimate whose error is up to a bucket's
// width; vLLM's TTFT buckets, for example, are 0.25 s wide between 0.25 s
// and 1 s. NaN when the histogram is empty.
func (h Histogram) Quantile(q float64) float64 {
	n := len(h.Counts)
	if n == 0 || h.Counts[n-1] <= 0 || math.IsNaN(q) {
		return math.NaN()
	}
	q = min(max(q, 0), 1)
	rank := q * h.Counts[n-1]
	i := 0
	for i < n-1 && h.Counts[i] < rank {
		i++
	}
	if math.IsInf(h.Bounds[i], 1) {
		if i == 0 {
			return math.NaN()
		}
		return h.Bounds[i-1]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.Bounds[i-1], h.Counts[i-1]
	}
	upper := h.Bounds[i]
	if lower > upper {
		lower = upper
	}
	inBucket := h.Counts[i] - below
	if inBucket <= 0 {
		return upper
	}
	return lower + (upper-lower)*(rank-below)/inBucket
}
