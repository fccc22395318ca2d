package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/servermetrics"
)

// DefaultScrapeInterval is server_metrics.interval's default.
const DefaultScrapeInterval = servermetrics.DefaultInterval

// ServerPrefix starts the SLO name of a server metric:
// server.prefix_cache_hit_rate bounds servermetrics' prefix_cache_hit_rate.
const ServerPrefix = "server."

// ServerMetrics says how the server's Prometheus metrics are scraped
// during a run: before it, at its start, every Interval and at its end.
type ServerMetrics struct {
	// Interval is the time between scrapes during the run. Default 1s;
	// 0s turns scraping off.
	Interval *Duration `yaml:"interval"`
	// Path is the metrics endpoint's path. Default /metrics.
	Path string `yaml:"path"`
}

// Scrapes reports whether the run scrapes the server's metrics.
func (m ServerMetrics) Scrapes() bool { return m.Interval == nil || *m.Interval > 0 }

// ScrapeInterval is Interval with its default.
func (m ServerMetrics) ScrapeInterval() time.Duration {
	if m.Interval == nil {
		return DefaultScrapeInterval
	}
	return m.Interval.D()
}

// serverMetric reports whether name is server.<one of servermetrics.Names>.
func serverMetric(name string) bool {
	rest, ok := strings.CutPrefix(name, ServerPrefix)
	return ok && slices.Contains(servermetrics.Names, rest)
}

func (sc *Scenario) validateServerMetrics() error {
	m := sc.ServerMetrics
	if m.Interval != nil && *m.Interval < 0 {
		return sc.errorf("server_metrics.interval", "must not be negative (0s turns scraping off), got %s", m.Interval.D())
	}
	if m.Interval != nil && *m.Interval > 0 && m.Interval.D() < 10*time.Millisecond {
		return sc.errorf("server_metrics.interval", "must be at least 10ms (or 0s for off), got %s", m.Interval.D())
	}
	if m.Path != "" && !strings.HasPrefix(m.Path, "/") {
		return sc.errorf("server_metrics.path", "must start with /, got %q", m.Path)
	}
	for i, b := range sc.SLO.Bounds {
		if serverMetric(b.Metric) && !m.Scrapes() {
			return sc.errorf(fmt.Sprintf("slo.bounds[%d]", i), "%s needs the server's metrics, but server_metrics.interval is 0s (off)", b.Metric)
		}
	}
	return nil
}
