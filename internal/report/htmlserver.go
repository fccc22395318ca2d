package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/metrics"
)

// A ServerSeries is one of the server's metrics over a run, as scraped
// (servermetrics): T in seconds from the run's start, V the values.
type ServerSeries struct {
	// Title heads the chart; Unit labels its y axis.
	Title, Unit string
	// Caption says what the metric is.
	Caption string
	T, V    []float64
}

// serverFigures draws the server's series on the time axis of the
// client's per-second charts, which starts at the earliest start of a
// successful request.
func serverFigures(series []ServerSeries, records []metrics.Record) []htmlFigure {
	first := time.Duration(math.MaxInt64)
	for _, r := range records {
		if r.Success && r.Start < first {
			first = r.Start
		}
	}
	if first == time.Duration(math.MaxInt64) {
		first = 0
	}
	var out []htmlFigure
	for _, s := range series {
		xs := make([]float64, len(s.T))
		for i, t := range s.T {
			xs[i] = t - first.Seconds()
		}
		out = append(out, htmlFigure{Title: s.Title, Caption: s.Caption,
			SVG: stepSVG(s.Title, xs, s.V, "time since first request (s)", s.Unit)})
	}
	return out
}

// stepSVG draws sampled values as a step line: each value holds until
// the next sample.
func stepSVG(title string, xs, ys []float64, xLabel, yLabel string) template.HTML {
	if len(xs) == 0 {
		return emptySVG(title)
	}
	xMin, xMax, top := math.Min(0, xs[0]), xs[len(xs)-1], 0.0
	for _, v := range ys {
		if !math.IsNaN(v) {
			top = math.Max(top, v)
		}
	}
	c := newSVGChart(xMin, xMax, 0, top*1.08, xLabel, yLabel)
	c.Axes(formatTick)
	var pts strings.Builder
	prev := math.NaN()
	for i, x := range xs {
		v := ys[i]
		if math.IsNaN(v) {
			continue
		}
		if !math.IsNaN(prev) {
			fmt.Fprintf(&pts, "%.1f,%.1f ", c.X(x), c.Y(prev))
		}
		fmt.Fprintf(&pts, "%.1f,%.1f ", c.X(x), c.Y(v))
		prev = v
	}
	fmt.Fprintf(&c.Body, `<polyline class="line" points="%s"/>`, strings.TrimSpace(pts.String()))
	return svg(c, title)
}
