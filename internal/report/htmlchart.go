package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/servegate/servegate/internal/chart"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/stats"
)

// This file draws the HTML report's charts as inline SVG, so the report
// needs no script and no network to render.

// newSVGChart is a report chart: 560 by 260 units, with room for the
// axes' ticks and titles. An empty range is widened to 1.
func newSVGChart(xMin, xMax, yMin, yMax float64, xLabel, yLabel string) *chart.Chart {
	if xMax <= xMin {
		xMax = xMin + 1
	}
	if yMax <= yMin {
		yMax = yMin + 1
	}
	return &chart.Chart{W: 560, H: 260, Left: 58, Right: 16, Top: 14, Bottom: 44,
		XMin: xMin, XMax: xMax, YMin: yMin, YMax: yMax, XLabel: xLabel, YLabel: yLabel}
}

// svg closes a report chart with its accessible title.
func svg(c *chart.Chart, title string) template.HTML {
	return template.HTML(c.SVG(title, ""))
}

// histogramSVG draws the distribution of values (ms) in bins, clipping a
// long tail into the last bin, with dashed lines at the marked percentiles.
func histogramSVG(title string, values []float64, xLabel string, marks []percentileMark) template.HTML {
	if len(values) == 0 {
		return emptySVG(title)
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	lo, hi := sorted[0], sorted[len(sorted)-1]
	clipped := false
	if p := stats.QuantileSorted(sorted, 0.99); hi > 1.5*p && p > lo {
		hi, clipped = p*1.25, true // a long tail would squash the body; the last bin holds it
	}
	if hi == lo {
		lo, hi = lo-0.5, hi+0.5
	}
	const bins = 40
	counts := make([]float64, bins)
	width := (hi - lo) / bins
	for _, v := range sorted {
		i := min(bins-1, max(0, int((v-lo)/width)))
		counts[i]++
	}
	top := 0.0
	for _, n := range counts {
		top = math.Max(top, n)
	}
	c := newSVGChart(lo, hi, 0, top*1.08, xLabel, "requests")
	c.W, c.H = 420, 250 // drawn three abreast: a narrower image keeps the text legible
	if strings.Contains(xLabel, "ITL") {
		c.YLabel = "gaps"
	}
	c.Axes(formatTick)
	for i, n := range counts {
		if n == 0 {
			continue
		}
		x0, x1 := c.X(lo+float64(i)*width), c.X(lo+float64(i+1)*width)
		upper := "–" + formatTick(lo+float64(i+1)*width)
		if clipped && i == bins-1 {
			upper = " and above"
		}
		fmt.Fprintf(&c.Body, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s%s ms: %d</title></rect>`,
			x0+0.5, c.Y(n), math.Max(0.5, x1-x0-1), c.Y(0)-c.Y(n), formatTick(lo+float64(i)*width), upper, int(n))
	}
	if clipped {
		fmt.Fprintf(&c.Body, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">last bin: up to %s ms</text>`,
			c.W-c.Right, c.H-6, formatTick(sorted[len(sorted)-1]))
	}
	for _, m := range marks {
		v := stats.QuantileSorted(sorted, m.P/100)
		if v > hi {
			v = hi
		}
		x := c.X(v)
		fmt.Fprintf(&c.Body, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, c.Top, x, c.H-c.Bottom)
		lx, anchor := x+3, "start"
		if x > c.W-c.Right-28 { // no room on the right: label the line from the left
			lx, anchor = x-3, "end"
		}
		fmt.Fprintf(&c.Body, `<text class="marklabel" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, lx, c.Top+10+float64(m.Row)*12, anchor, html.EscapeString(m.Label))
	}
	return svg(c, title)
}

// A percentileMark is a dashed line on a histogram.
type percentileMark struct {
	P     float64
	Label string
	Row   int // label row, so neighbouring labels do not overlap
}

// lineSVG draws y over x as a line (a step per x bucket).
func lineSVG(title string, ys []float64, xLabel, yLabel string) template.HTML {
	if len(ys) == 0 {
		return emptySVG(title)
	}
	top := 0.0
	for _, v := range ys {
		top = math.Max(top, v)
	}
	c := newSVGChart(0, float64(len(ys)), 0, top*1.08, xLabel, yLabel)
	c.Axes(formatTick)
	var pts strings.Builder
	fmt.Fprintf(&pts, "%.1f,%.1f ", c.X(0), c.Y(0))
	for i, v := range ys {
		fmt.Fprintf(&pts, "%.1f,%.1f %.1f,%.1f ", c.X(float64(i)), c.Y(v), c.X(float64(i+1)), c.Y(v))
	}
	fmt.Fprintf(&pts, "%.1f,%.1f", c.X(float64(len(ys))), c.Y(0))
	fmt.Fprintf(&c.Body, `<polygon class="area" points="%s"/>`, pts.String())
	fmt.Fprintf(&c.Body, `<polyline class="line" points="%s"/>`, pts.String())
	return svg(c, title)
}

// scatterSVG draws points (x, y), at most maxPoints of them evenly chosen.
func scatterSVG(title string, xs, ys []float64, xLabel, yLabel string) template.HTML {
	if len(xs) == 0 {
		return emptySVG(title)
	}
	xMax, yMin, yMax := 0.0, 0.0, 0.0
	for i := range xs {
		xMax = math.Max(xMax, xs[i])
		yMin, yMax = math.Min(yMin, ys[i]), math.Max(yMax, ys[i])
	}
	c := newSVGChart(0, xMax*1.02, yMin, yMax*1.08, xLabel, yLabel)
	c.Axes(formatTick)
	const maxPoints = 4000
	step := max(1, len(xs)/maxPoints)
	for i := 0; i < len(xs); i += step {
		fmt.Fprintf(&c.Body, `<circle class="dot" cx="%.1f" cy="%.1f" r="2"/>`, c.X(xs[i]), c.Y(ys[i]))
	}
	return svg(c, title)
}

// barsSVG draws labelled horizontal bars.
func barsSVG(title string, labels []string, counts []int) template.HTML {
	if len(labels) == 0 {
		return emptySVG(title)
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	rowH := 26.0
	c := &chart.Chart{W: 560, H: 12 + rowH*float64(len(labels)), Class: "bars"}
	for i, l := range labels {
		y := 6 + rowH*float64(i)
		w := 340 * float64(counts[i]) / float64(max(top, 1))
		fmt.Fprintf(&c.Body, `<text class="tick" x="150" y="%.1f" text-anchor="end">%s</text>`, y+15, html.EscapeString(l))
		fmt.Fprintf(&c.Body, `<rect class="bar fail" x="158" y="%.1f" width="%.1f" height="18"/>`, y+2, math.Max(w, 1))
		fmt.Fprintf(&c.Body, `<text class="tick" x="%.1f" y="%.1f">%d</text>`, 164+w, y+15, counts[i])
	}
	return svg(c, title)
}

func emptySVG(title string) template.HTML {
	return template.HTML(fmt.Sprintf(`<p class="empty">%s: no data.</p>`, html.EscapeString(title)))
}

// turnsSVG draws the TTFT by turn position of a session run: for each
// turn (x, 1-based) the median and the p99 of its requests' TTFT (ms), as
// two lines with a dot per turn.
func turnsSVG(title string, turns []metrics.TurnTTFT) template.HTML {
	if len(turns) == 0 {
		return emptySVG(title)
	}
	top := 0.0
	for _, t := range turns {
		top = math.Max(top, t.Stats.Percentile(99))
	}
	last := float64(turns[len(turns)-1].Turn + 1)
	c := newSVGChart(0.5, last+0.5, 0, top*1.08, "turn", "TTFT (ms)")
	c.IntX = true
	c.Axes(formatTick)
	for i, s := range []struct {
		class string
		v     func(metrics.Stats) float64
	}{
		{"line", func(s metrics.Stats) float64 { return s.Median }},
		{"line p99", func(s metrics.Stats) float64 { return s.Percentile(99) }},
	} {
		var pts strings.Builder
		for _, t := range turns {
			x, y := c.X(float64(t.Turn+1)), c.Y(s.v(t.Stats))
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
			fmt.Fprintf(&c.Body, `<circle class="dot" cx="%.1f" cy="%.1f" r="3"/>`, x, y)
		}
		fmt.Fprintf(&c.Body, `<polyline class="%s" points="%s"/>`, s.class, strings.TrimSpace(pts.String()))
		label := []string{"p50", "p99"}[i]
		fmt.Fprintf(&c.Body, `<text class="marklabel" x="%.1f" y="%.1f">%s</text>`, c.X(last)+4, c.Y(s.v(turns[len(turns)-1].Stats))-4, label)
	}
	return svg(c, title)
}
