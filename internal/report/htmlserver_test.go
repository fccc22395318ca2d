package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/capacity"
	"github.com/servegate/servegate/internal/metrics"
)

// TestHTMLReportServerSeries: the server's series are drawn with the
// client's over-time charts, on their time axis.
func TestHTMLReportServerSeries(t *testing.T) {
	recs := []metrics.Record{{Success: true, Start: 500 * time.Millisecond, Latency: time.Second, OutputTokens: 3, TTFT: time.Millisecond}}
	var buf bytes.Buffer
	require.NoError(t, WriteHTMLReport(&buf, HTMLReport{Records: recs, Server: []ServerSeries{
		{Title: "Server KV-cache use", Unit: "fraction", T: []float64{0, 1, 2}, V: []float64{0, 0.5, math.NaN()}},
		{Title: "Server requests waiting", Unit: "requests", T: []float64{0.5, 1.5}, V: []float64{3, 7}},
	}}))
	page := buf.String()
	assert.Contains(t, page, "<h3>Server KV-cache use</h3>")
	assert.Contains(t, page, "<h3>Server requests waiting</h3>")
	assert.Less(t, strings.Index(page, "Concurrent requests"), strings.Index(page, "Server KV-cache use"), "beside the client's concurrency")
	assert.NotContains(t, page, "NaN")

	svg := string(stepSVG("s", []float64{0, 1, 2}, []float64{1, 2, 3}, "x", "y"))
	i := strings.Index(svg, `points="`)
	require.Positive(t, i)
	pts := strings.Fields(svg[i+len(`points="`) : i+strings.Index(svg[i:], `"/>`)])
	assert.Len(t, pts, 5, "a step line: three samples and two risers")
}

// TestHTMLReportCapacity: a search's steps are plotted against their rate.
func TestHTMLReportCapacity(t *testing.T) {
	res := &capacity.Result{MaxRate: 24, MinFailRate: 26, Crossing: 24.5, Steps: []capacity.Step{
		{Rate: 8, Pass: true, Goodput: 7.9, P99TTFT: 40},
		{Rate: 32, Pass: false, Goodput: 3, P99TTFT: 1500},
		{Rate: 24, Pass: true, Goodput: 23, P99TTFT: 60},
	}}
	var buf bytes.Buffer
	require.NoError(t, WriteHTMLReport(&buf, HTMLReport{Capacity: res}))
	page := buf.String()
	assert.Contains(t, page, "<h3>p99 TTFT against request rate</h3>")
	assert.Contains(t, page, "<h3>Goodput against request rate</h3>")
	assert.Contains(t, page, "max goodput rate: 24 req/s (fails at 26; SLO edge interpolated at 24.5)")
	assert.Equal(t, 2, strings.Count(page, `class="dot fail"`), "the failed step, in both charts")

	buf.Reset()
	require.NoError(t, WriteHTMLReport(&buf, HTMLReport{}))
	assert.NotContains(t, buf.String(), "Capacity</h2>", "no search, no section")
}
