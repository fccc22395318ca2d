package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"sort"
	"strings"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/stats"
)

// This file draws the HTML report's charts as inline SVG, so the report
// needs no script and no network to render.

// An svgChart maps data coordinates onto a fixed-size SVG plot area.
type svgChart struct {
	w, h                   float64 // whole image, px
	left, right, top, bot  float64 // margins, px
	xMin, xMax, yMin, yMax float64
	xLabel, yLabel         string
	// intX keeps only the whole x ticks (turn numbers).
	intX bool
	b    strings.Builder
}

func newSVGChart(xMin, xMax, yMin, yMax float64, xLabel, yLabel string) *svgChart {
	if xMax <= xMin {
		xMax = xMin + 1
	}
	if yMax <= yMin {
		yMax = yMin + 1
	}
	return &svgChart{w: 560, h: 260, left: 58, right: 16, top: 14, bot: 44,
		xMin: xMin, xMax: xMax, yMin: yMin, yMax: yMax, xLabel: xLabel, yLabel: yLabel}
}

func (c *svgChart) x(v float64) float64 {
	return c.left + (v-c.xMin)/(c.xMax-c.xMin)*(c.w-c.left-c.right)
}

func (c *svgChart) y(v float64) float64 {
	return c.h - c.bot - (v-c.yMin)/(c.yMax-c.yMin)*(c.h-c.top-c.bot)
}

// axes draws the grid, ticks and axis titles.
func (c *svgChart) axes() {
	for _, t := range niceTicks(c.yMin, c.yMax, 5) {
		y := c.y(t)
		fmt.Fprintf(&c.b, `<line class="gridline" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, c.left, y, c.w-c.right, y)
		fmt.Fprintf(&c.b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, c.left-6, y+4, formatTick(t))
	}
	for _, t := range niceTicks(c.xMin, c.xMax, 6) {
		if c.intX && (t != math.Trunc(t) || t < c.xMin || t > c.xMax) {
			continue
		}
		x := c.x(t)
		fmt.Fprintf(&c.b, `<line class="tickmark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, c.h-c.bot, x, c.h-c.bot+4)
		fmt.Fprintf(&c.b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, c.h-c.bot+17, formatTick(t))
	}
	fmt.Fprintf(&c.b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, c.left, c.h-c.bot, c.w-c.right, c.h-c.bot)
	fmt.Fprintf(&c.b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, c.left, c.top, c.left, c.h-c.bot)
	fmt.Fprintf(&c.b, `<text class="label" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (c.left+c.w-c.right)/2, c.h-6, html.EscapeString(c.xLabel))
	fmt.Fprintf(&c.b, `<text class="label" transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, (c.top+c.h-c.bot)/2, html.EscapeString(c.yLabel))
}

// svg closes the image with an accessible title.
func (c *svgChart) svg(title string) template.HTML {
	return template.HTML(fmt.Sprintf(`<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">%s</svg>`,
		c.w, c.h, html.EscapeString(title), c.b.String()))
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
	c.w, c.h = 420, 250 // drawn three abreast: a narrower image keeps the text legible
	if strings.Contains(xLabel, "ITL") {
		c.yLabel = "gaps"
	}
	c.axes()
	for i, n := range counts {
		if n == 0 {
			continue
		}
		x0, x1 := c.x(lo+float64(i)*width), c.x(lo+float64(i+1)*width)
		upper := "–" + formatTick(lo+float64(i+1)*width)
		if clipped && i == bins-1 {
			upper = " and above"
		}
		fmt.Fprintf(&c.b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s%s ms: %d</title></rect>`,
			x0+0.5, c.y(n), math.Max(0.5, x1-x0-1), c.y(0)-c.y(n), formatTick(lo+float64(i)*width), upper, int(n))
	}
	if clipped {
		fmt.Fprintf(&c.b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">last bin: up to %s ms</text>`,
			c.w-c.right, c.h-6, formatTick(sorted[len(sorted)-1]))
	}
	for _, m := range marks {
		v := stats.QuantileSorted(sorted, m.P/100)
		if v > hi {
			v = hi
		}
		x := c.x(v)
		fmt.Fprintf(&c.b, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, c.top, x, c.h-c.bot)
		lx, anchor := x+3, "start"
		if x > c.w-c.right-28 { // no room on the right: label the line from the left
			lx, anchor = x-3, "end"
		}
		fmt.Fprintf(&c.b, `<text class="marklabel" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, lx, c.top+10+float64(m.Row)*12, anchor, html.EscapeString(m.Label))
	}
	return c.svg(title)
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
	c.axes()
	var pts strings.Builder
	fmt.Fprintf(&pts, "%.1f,%.1f ", c.x(0), c.y(0))
	for i, v := range ys {
		fmt.Fprintf(&pts, "%.1f,%.1f %.1f,%.1f ", c.x(float64(i)), c.y(v), c.x(float64(i+1)), c.y(v))
	}
	fmt.Fprintf(&pts, "%.1f,%.1f", c.x(float64(len(ys))), c.y(0))
	fmt.Fprintf(&c.b, `<polygon class="area" points="%s"/>`, pts.String())
	fmt.Fprintf(&c.b, `<polyline class="line" points="%s"/>`, pts.String())
	return c.svg(title)
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
	c.axes()
	const maxPoints = 4000
	step := max(1, len(xs)/maxPoints)
	for i := 0; i < len(xs); i += step {
		fmt.Fprintf(&c.b, `<circle class="dot" cx="%.1f" cy="%.1f" r="2"/>`, c.x(xs[i]), c.y(ys[i]))
	}
	return c.svg(title)
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
	h := 12 + rowH*float64(len(labels))
	var b strings.Builder
	for i, l := range labels {
		y := 6 + rowH*float64(i)
		w := 340 * float64(counts[i]) / float64(max(top, 1))
		fmt.Fprintf(&b, `<text class="tick" x="150" y="%.1f" text-anchor="end">%s</text>`, y+15, html.EscapeString(l))
		fmt.Fprintf(&b, `<rect class="bar fail" x="158" y="%.1f" width="%.1f" height="18"/>`, y+2, math.Max(w, 1))
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f">%d</text>`, 164+w, y+15, counts[i])
	}
	return template.HTML(fmt.Sprintf(`<svg class="chart bars" viewBox="0 0 560 %.0f" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">%s</svg>`,
		h, html.EscapeString(title), b.String()))
}

func emptySVG(title string) template.HTML {
	return template.HTML(fmt.Sprintf(`<p class="empty">%s: no data.</p>`, html.EscapeString(title)))
}

// niceTicks returns about n round values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	span := hi - lo
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return []float64{lo}
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for t := math.Ceil(lo/step) * step; t <= hi+step*1e-9; t += step {
		ticks = append(ticks, math.Round(t/step)*step)
	}
	return ticks
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
	c.intX = true
	c.axes()
	for i, s := range []struct {
		class string
		v     func(metrics.Stats) float64
	}{
		{"line", func(s metrics.Stats) float64 { return s.Median }},
		{"line p99", func(s metrics.Stats) float64 { return s.Percentile(99) }},
	} {
		var pts strings.Builder
		for _, t := range turns {
			x, y := c.x(float64(t.Turn+1)), c.y(s.v(t.Stats))
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
			fmt.Fprintf(&c.b, `<circle class="dot" cx="%.1f" cy="%.1f" r="3"/>`, x, y)
		}
		fmt.Fprintf(&c.b, `<polyline class="%s" points="%s"/>`, s.class, strings.TrimSpace(pts.String()))
		label := []string{"p50", "p99"}[i]
		fmt.Fprintf(&c.b, `<text class="marklabel" x="%.1f" y="%.1f">%s</text>`, c.x(last)+4, c.y(s.v(turns[len(turns)-1].Stats))-4, label)
	}
	return c.svg(title)
}
