package scenario

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerMetricsAndCapacityKeys(t *testing.T) {
	scs, err := Parse("ok.yaml", []byte(`name: a
server_metrics: {interval: 250ms}
slo:
  bounds: ["server.prefix_cache_hit_rate >= 0.5", "failed == 0"]
capacity: {max_rate: 64}
`))
	require.NoError(t, err)
	sc := scs[0]
	assert.Equal(t, 250*time.Millisecond, sc.ServerMetrics.ScrapeInterval())
	require.NotNil(t, sc.Capacity)
	assert.Equal(t, DefaultCapacityMinRate, sc.Capacity.MinRate)
	assert.Equal(t, 64.0, sc.Capacity.MaxRate)
	assert.Equal(t, DefaultCapacityPrecision, sc.Capacity.Precision)
	assert.Equal(t, DefaultCapacityBudget, sc.Capacity.Budget.D())

	scs, err = Parse("ok.yaml", []byte("name: a\n"))
	require.NoError(t, err)
	assert.True(t, scs[0].ServerMetrics.Scrapes(), "scraping is on by default")
	assert.Equal(t, time.Second, scs[0].ServerMetrics.ScrapeInterval())
	assert.Nil(t, scs[0].Capacity)
}

func TestServerMetricsAndCapacityErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unknown server metric", "name: a\nslo:\n  bounds: [\"server.hits >= 1\"]\n", `bad.yaml:3: slo.bounds[0]: unknown metric "server.hits" (docs/scenarios.md lists the metrics)`},
		{"server bound with scraping off", "name: a\nserver_metrics: {interval: 0s}\nslo:\n  bounds: [\"server.num_preemptions == 0\"]\n", "bad.yaml:4: slo.bounds[0]: server.num_preemptions needs the server's metrics, but server_metrics.interval is 0s (off)"},
		{"negative interval", "name: a\nserver_metrics:\n  interval: -1s\n", "bad.yaml:3: server_metrics.interval: must not be negative (0s turns scraping off), got -1s"},
		{"tiny interval", "name: a\nserver_metrics:\n  interval: 1ms\n", "bad.yaml:3: server_metrics.interval: must be at least 10ms (or 0s for off), got 1ms"},
		{"bad path", "name: a\nserver_metrics:\n  path: metrics\n", `bad.yaml:3: server_metrics.path: must start with /, got "metrics"`},
		{"capacity without bounds", "name: a\ncapacity: {}\n", "bad.yaml:2: capacity: needs slo.bounds: the capacity is the highest rate at which they all hold"},
		{"capacity with a rate", "name: a\nload:\n  request_rate: 3\nslo: {bounds: [\"failed == 0\"]}\ncapacity: {}\n", "bad.yaml:3: load.request_rate: cannot be combined with capacity: the search sets the rate"},
		{"capacity max below min", "name: a\nslo: {bounds: [\"failed == 0\"]}\ncapacity:\n  min_rate: 8\n  max_rate: 4\n", "bad.yaml:5: capacity.max_rate: must be a finite rate at least capacity.min_rate (8), got 4"},
		{"capacity precision", "name: a\nslo: {bounds: [\"failed == 0\"]}\ncapacity:\n  precision: 1.5\n", "bad.yaml:4: capacity.precision: must be a fraction in (0, 1), got 1.5"},
		{"capacity zero min", "name: a\nslo: {bounds: [\"failed == 0\"]}\ncapacity:\n  min_rate: 0\n", "bad.yaml:4: capacity.min_rate: must be a positive finite rate (requests/s), got 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(c.src))
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}
}
