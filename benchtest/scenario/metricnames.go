package scenario

import "slices"

// vllmMetrics are the numbers of vLLM's result JSON that an SLO may bound,
// besides the mean_/median_/std_/pNN_ forms of the latency metrics.
// TODO(merge engine): replace with metrics.KnownMetric.
var vllmMetrics = []string{
	"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
	"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
	"max_output_tokens_per_s", "max_concurrent_requests", "failure_ratio",
	"failed_http_status", "failed_stream_error", "failed_timeout", "failed_transport", "failed_canceled",
}

// extraLatency are servegate's latency metrics beside vLLM's.
var extraLatency = []string{"queue", "schedule_lag", "e2el_with_queue"}

// DerivedMetrics are computed from the summary for SLOs: goodput_ratio is
// request_goodput / request_throughput, the share of requests that met
// slo.goodput.
var DerivedMetrics = []string{"goodput_ratio"}

// KnownMetric reports whether an SLO may bound the metric name.
func KnownMetric(name string) bool {
	if slices.Contains(DerivedMetrics, name) || slices.Contains(vllmMetrics, name) {
		return true
	}
	for _, m := range append(slices.Clone(percentileMetrics), extraLatency...) {
		for _, stat := range []string{"mean_", "median_", "std_"} {
			if name == stat+m+"_ms" {
				return true
			}
		}
	}
	p, m, ok := percentileOf(name)
	return ok && p >= 0 && p <= 100 && (slices.Contains(percentileMetrics, m) || slices.Contains(extraLatency, m))
}

// WithDerived extends a summary lookup with DerivedMetrics.
func WithDerived(lookup func(name string) (float64, bool)) func(name string) (float64, bool) {
	return func(name string) (float64, bool) {
		switch name {
		case "goodput_ratio":
			good, ok1 := lookup("request_goodput")
			all, ok2 := lookup("request_throughput")
			if !ok1 || !ok2 {
				return 0, false
			}
			if all == 0 {
				return 0, true
			}
			return good / all, true
		}
		return lookup(name)
	}
}
