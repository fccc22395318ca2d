package servermetrics

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Names are the values of a Summary, in the order the result JSON writes
// them. Counter values are deltas over the run (from the scrape at its
// start, after the warm-ups, to the scrape at its end); peaks are the
// largest value of any scrape of the run; the latency percentiles (ms) are
// estimated from the deltas of the server's histograms by linear
// interpolation within a bucket, as Prometheus's histogram_quantile does,
// so they are only as fine as vLLM's buckets (its queue-time and e2e
// buckets start at 0.3 s: requests that all queue for less read as a p50
// of 150 ms).
var Names = []string{
	"prefix_cache_queries", "prefix_cache_hits", "prefix_cache_hit_rate",
	"num_preemptions",
	"kv_cache_usage_peak", "num_requests_waiting_peak", "num_requests_running_peak",
	"prompt_tokens", "generation_tokens",
	"p50_ttft_ms", "p99_ttft_ms",
	"p50_queue_time_ms", "p99_queue_time_ms",
	"p50_e2e_latency_ms", "p99_e2e_latency_ms",
	"spec_decode_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens",
	"spec_decode_acceptance_rate", "spec_decode_mean_acceptance_length",
}

// deltas map a Summary name to its counter.
var deltas = map[string]string{
	"prefix_cache_queries": PrefixCacheQueries,
	"prefix_cache_hits":    PrefixCacheHits,
	"num_preemptions":      NumPreemptions,
	"prompt_tokens":        PromptTokens,
	"generation_tokens":    GenerationTokens,

	"spec_decode_drafts":          SpecDecodeDrafts,
	"spec_decode_draft_tokens":    SpecDecodeDraftTokens,
	"spec_decode_accepted_tokens": SpecDecodeAcceptedTokens,
}

// peaks map a Summary name to its gauge.
var peaks = map[string]string{
	"kv_cache_usage_peak":       KVCacheUsage,
	"num_requests_waiting_peak": RequestsWaiting,
	"num_requests_running_peak": RequestsRunning,
}

// quantiles map a Summary name to its histogram and quantile.
var quantiles = map[string]struct {
	hist string
	q    float64
}{
	"p50_ttft_ms":        {TTFTSeconds, 0.5},
	"p99_ttft_ms":        {TTFTSeconds, 0.99},
	"p50_queue_time_ms":  {QueueTimeSeconds, 0.5},
	"p99_queue_time_ms":  {QueueTimeSeconds, 0.99},
	"p50_e2e_latency_ms": {E2ELatencySeconds, 0.5},
	"p99_e2e_latency_ms": {E2ELatencySeconds, 0.99},
}

// A Summary is what the server's metrics say about one run.
type Summary struct {
	// Available is false when no scrape of the run succeeded; Note says
	// why.
	Available bool
	// Note explains missing values (no endpoint, failed scrapes, a
	// counter that went backwards).
	Note string
	// Interval is the time between scrapes.
	Interval time.Duration
	// Scrapes and FailedScrapes count the scrapes of the run.
	Scrapes, FailedScrapes int
	// Values holds the Names the server's metrics gave; a metric the
	// server does not export leaves its names out.
	Values map[string]float64
	// Before holds the counters (by vLLM name) scraped before the run sent
	// anything, the ready check and warm-ups included; nil when that
	// scrape failed.
	Before map[string]float64
	// Series are the run's scrapes, for the detailed result and plots.
	Series []Snapshot
	// Info holds the labels of the server's info families (CacheConfigInfo,
	// SimInfo) by family name, from the last scrape that had any (the one
	// before the run included); nil when none had.
	Info map[string]map[string]string
}

// Value returns one of Names.
func (s *Summary) Value(name string) (float64, bool) {
	if s == nil {
		return 0, false
	}
	v, ok := s.Values[name]
	return v, ok
}

// Summarize computes the Summary of a Recorder's scrapes.
func Summarize(r *Recorder) *Summary {
	before, series, failed, err := r.Series()
	s := &Summary{Interval: r.Interval(), Scrapes: len(series), FailedScrapes: failed, Values: map[string]float64{}, Series: series}
	if before != nil {
		s.Before = before.Values
		s.Info = before.Info
	}
	for _, snap := range series {
		if snap.Info != nil {
			s.Info = snap.Info
		}
	}
	var notes []string
	if err != nil {
		if errors.Is(err, ErrNoEndpoint) {
			notes = append(notes, fmt.Sprintf("the server has no metrics endpoint (%v)", err))
		} else {
			notes = append(notes, fmt.Sprintf("%d scrapes failed, the first with: %v", failed, err))
		}
	}
	if len(series) < 2 {
		if len(notes) == 0 {
			notes = append(notes, "fewer than two scrapes succeeded")
		}
		s.Note = join(notes)
		return s
	}
	s.Available = true
	first, last := series[0], series[len(series)-1]
	// In a fixed order, so that the notes read the same every time.
	for _, name := range slices.Sorted(maps.Keys(deltas)) {
		c := deltas[name]
		a, ok1 := first.Values[c]
		b, ok2 := last.Values[c]
		if !ok1 || !ok2 {
			continue
		}
		if b < a {
			notes = append(notes, c+" went down during the run (a server restart?); left out")
			continue
		}
		s.Values[name] = b - a
	}
	if q, ok := s.Values["prefix_cache_queries"]; ok {
		if h, ok := s.Values["prefix_cache_hits"]; ok && q > 0 {
			s.Values["prefix_cache_hit_rate"] = h / q
		}
	}
	specRates(s.Values)
	for name, g := range peaks {
		peak, found := math.Inf(-1), false
		for _, snap := range series {
			if v, ok := snap.Values[g]; ok {
				peak, found = math.Max(peak, v), true
			}
		}
		if found {
			s.Values[name] = peak
		}
	}
	for name, q := range quantiles {
		h1, ok1 := first.Histograms[q.hist]
		h2, ok2 := last.Histograms[q.hist]
		if !ok1 || !ok2 {
			continue
		}
		d, ok := h2.Sub(h1)
		if !ok {
			continue
		}
		if v := d.Quantile(q.q); !math.IsNaN(v) {
			s.Values[name] = v * 1000
		}
	}
	s.Note = join(notes)
	return s
}

// specRates derives speculative decoding's figures from the run's deltas,
// as vLLM's SpecDecodingLogging does: the acceptance rate (accepted / draft
// tokens) and the mean acceptance length (1 + accepted / drafts, the bonus
// token included). A run without drafts has neither.
func specRates(v map[string]float64) {
	drafts, ok1 := v["spec_decode_drafts"]
	draftTok, ok2 := v["spec_decode_draft_tokens"]
	acc, ok3 := v["spec_decode_accepted_tokens"]
	if !ok1 || !ok2 || !ok3 || drafts <= 0 || draftTok <= 0 {
		return
	}
	v["spec_decode_acceptance_rate"] = acc / draftTok
	v["spec_decode_mean_acceptance_length"] = 1 + acc/drafts
}

func join(notes []string) string {
	out := ""
	for i, n := range notes {
		if i > 0 {
			out += "; "
		}
		out += n
	}
	return out
}

// seriesColumns are the raw series the detailed result keeps, by vLLM
// name, in order.
var seriesColumns = []string{KVCacheUsage, RequestsWaiting, RequestsRunning, PrefixCacheQueries, PrefixCacheHits, NumPreemptions, GenerationTokens, PromptTokens}

// Column returns the values of one metric over the series and the time of
// each scrape in seconds since start; scrapes that lack the metric are
// left out.
func (s *Summary) Column(name string, start time.Time) (t, v []float64) {
	for _, snap := range s.Series {
		if x, ok := snap.Values[name]; ok {
			t = append(t, snap.At.Sub(start).Seconds())
			v = append(v, x)
		}
	}
	return t, v
}

// SeriesColumns lists the metrics whose raw series a detailed result
// keeps.
func SeriesColumns() []string { return append([]string(nil), seriesColumns...) }
