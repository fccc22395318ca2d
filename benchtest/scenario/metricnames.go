package scenario

import (
	"slices"

	"github.com/servegate/servegate/internal/metrics"
)

// derivedMetrics are computed from the summary for SLOs: goodput_ratio is
// request_goodput / request_throughput, the share of requests that met
// slo.goodput.
var derivedMetrics = []string{"goodput_ratio"}

// knownMetric reports whether an SLO may bound the metric name: a name of
// vLLM's result JSON or one of servegate's extras (metrics.KnownMetric),
// one of derivedMetrics, or a server metric, "server." and one of
// servermetrics.Names.
func knownMetric(name string) bool {
	return slices.Contains(derivedMetrics, name) || metrics.KnownMetric(name) || serverMetric(name)
}

// WithDerived extends a summary lookup (metrics.Summary.Value) with
// derivedMetrics.
func WithDerived(lookup func(name string) (float64, bool)) func(name string) (float64, bool) {
	return func(name string) (float64, bool) {
		if name == "goodput_ratio" {
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
