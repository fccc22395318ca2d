package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// record builds a successful record starting at start (s) whose chunks
// arrive ttft, then each gap, later.
func record(start, ttft float64, gaps ...float64) metrics.Record {
	r := metrics.Record{Start: sec(start), TTFT: sec(ttft), Success: true, OutputTokens: len(gaps) + 1}
	end := ttft
	for _, g := range gaps {
		r.ITL = append(r.ITL, sec(g))
		end += g
	}
	r.Latency = sec(end)
	return r
}

func TestPerSecondSeries(t *testing.T) {
	recs := []metrics.Record{
		record(0.5, 0.2, 0.4, 0.4, 0.4), // chunks at 0.7 1.1 1.5 1.9, active 0.5..1.9
		record(1.2, 1.0, 0.5),           // chunks at 2.2 2.7, active 1.2..2.7
		{Start: sec(0.1), Success: false, Failure: metrics.FailureTimeout, Latency: sec(9)},
	}
	tokens, conc := PerSecondSeries(recs)
	// Offsets from the first start (0.5): chunks at 0.2 0.6 1.0 1.4 and
	// 1.7 2.2; active 0..1.4 and 0.7..2.2; ceil(2.2)+1 = 4 buckets.
	assert.Equal(t, []float64{2, 3, 1, 0}, tokens)
	assert.Equal(t, []float64{2, 2, 1, 0}, conc)

	tokens, conc = PerSecondSeries([]metrics.Record{{Success: false}})
	assert.Empty(t, tokens)
	assert.Empty(t, conc)
}

func TestWriteTermPlotGolden(t *testing.T) {
	var ramp, spiky []float64
	for i := 0; i < 30; i++ {
		ramp = append(ramp, float64(i*i))
	}
	for i := 0; i < 150; i++ {
		spiky = append(spiky, 40+30*math.Sin(float64(i)/9))
	}
	spiky[77] = 250
	var buf bytes.Buffer
	require.NoError(t, WriteTermPlot(&buf, TermPlot{Title: "Output tokens per second", XLabel: "s"}, ramp))
	require.NoError(t, WriteTermPlot(&buf, TermPlot{Title: "Spiky", Width: 50, Height: 8, XLabel: "s"}, spiky))
	require.NoError(t, WriteTermPlot(&buf, TermPlot{Title: "Flat"}, []float64{3, 3, 3}))
	golden(t, "termplot.golden", buf.Bytes())
	assert.Contains(t, buf.String(), "250", "the spike's value labels the top of the axis")
}

func TestWriteTermPlotEmpty(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTermPlot(&buf, TermPlot{Title: "T"}, nil))
	assert.Equal(t, "T: no data\n", buf.String())
}

func TestWriteThroughputPlots(t *testing.T) {
	var recs []metrics.Record
	for i := 0; i < 20; i++ {
		recs = append(recs, record(float64(i)*0.3, 0.1, 0.05, 0.05, 0.05, 0.05))
	}
	var buf bytes.Buffer
	require.NoError(t, WriteThroughputPlots(&buf, recs))
	out := buf.String()
	assert.Contains(t, out, "Output tokens per second")
	assert.Contains(t, out, "Concurrent requests per second")
	assert.Equal(t, 2, strings.Count(out, "└"))
}
