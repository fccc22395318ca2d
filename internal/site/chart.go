package site

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/chart"
	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/stats"
)

// Chart geometry, in SVG user units (CSS pixels at 100%).
const (
	chartW      = 960
	chartH      = 250
	marginLeft  = 64
	marginRight = 16
	marginTop   = 28
	marginBot   = 34
)

// Colours of change kinds; a kind is also written in words beside the
// line, so colour is never the only cue.
var kindColour = map[string]string{
	"regression":       "#c62828",
	"improvement":      "#2e7d32",
	"within tolerance": "#757575",
}

// scale maps a unit's values for display: seconds below 1 as
// milliseconds, ratios as percent.
type scale struct {
	factor float64
	unit   string
}

func scaleFor(unit string, hi float64) scale {
	switch {
	case strings.HasSuffix(unit, "-sec") || unit == "sec/op":
		if hi < 1 {
			return scale{1000, "ms"}
		}
		return scale{1, "s"}
	case strings.HasSuffix(unit, "-ratio"):
		return scale{100, "%"}
	}
	return scale{1, unit}
}

func (s scale) format(v float64) string {
	v *= s.factor
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// seriesChart writes one series as an inline SVG chart: the per-commit median
// as a line of points (each a link to its commit, with a tooltip), the
// runs' min–max as a band, each segment's level between change points
// as a dashed line, and each change point as a vertical line labelled
// with its shift. The y axis spans the data, not zero, so a 5% step
// fills a visible share of the height.
func seriesChart(out *strings.Builder, s *gate.HistorySeries, times map[string]time.Time, commitURL func(string) string) {
	n := len(s.Values)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range n {
		lo, hi = math.Min(lo, s.Low[i]), math.Max(hi, s.High[i])
	}
	if n == 0 {
		lo, hi = 0, 1
	}
	switch pad := (hi - lo) * 0.08; {
	case pad > 0:
		lo, hi = lo-pad, hi+pad
	case lo == 0: // a constant zero, such as a fail ratio: show it at the bottom
		hi = 0.01
	default:
		lo, hi = lo-math.Abs(lo)*0.05, hi+math.Abs(hi)*0.05
	}
	sc := scaleFor(s.Unit, hi)
	xMin, xMax := 0.0, float64(n-1)
	if n <= 1 { // one point sits in the middle
		xMin, xMax = -1, 1
	}
	c := &chart.Chart{W: chartW, H: chartH, Left: marginLeft, Right: marginRight, Top: marginTop, Bottom: marginBot,
		XMin: xMin, XMax: xMax, YMin: lo, YMax: hi}
	x, y := c.X, c.Y
	plotH := float64(chartH - marginTop - marginBot)
	// The grid: five ticks over the data's range.
	c.YGrid(5, sc.format)
	b := &c.Body
	fmt.Fprintf(b, `<text class="axis" x="4" y="14">%s</text>`, html.EscapeString(sc.unit))
	if s.From > 0 && s.From < n {
		fmt.Fprintf(b, `<rect class="unsearched" x="%d" y="%d" width="%.1f" height="%.0f"><title>change points are searched in the newest %d commits only</title></rect>`,
			marginLeft, marginTop, x(float64(s.From)-0.5)-marginLeft, plotH, n-s.From)
	}
	// The runs' spread as a band, then the medians as a line.
	if n > 1 {
		b.WriteString(`<path class="band" d="M`)
		for i := range n {
			fmt.Fprintf(b, "%.1f,%.1f ", x(float64(i)), y(s.High[i]))
		}
		for i := n - 1; i >= 0; i-- {
			fmt.Fprintf(b, "%.1f,%.1f ", x(float64(i)), y(s.Low[i]))
		}
		b.WriteString(`Z"/><polyline class="median" points="`)
		for i := range n {
			fmt.Fprintf(b, "%.1f,%.1f ", x(float64(i)), y(s.Values[i]))
		}
		b.WriteString(`"/>`)
	}
	// Levels between change points, and the change points.
	bounds := []int{s.From}
	for _, c := range s.Changes {
		bounds = append(bounds, c.Index)
	}
	bounds = append(bounds, n)
	if s.Skipped == "" {
		for j := 0; j+1 < len(bounds); j++ {
			a, e := bounds[j], bounds[j+1]
			level := stats.Median(s.Values[a:e])
			fmt.Fprintf(b, `<line class="level" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(float64(a)), x(float64(e-1)), y(level), y(level))
		}
	}
	for _, c := range s.Changes {
		cx := x(float64(c.Index) - 0.5)
		col := kindColour[c.Kind]
		label := fmt.Sprintf("%s %s", pct(c.Change), c.Kind)
		anchor := "start"
		if cx > chartW-200 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<g class="change" data-commit="%s"><line x1="%.1f" x2="%.1f" y1="%d" y2="%.0f" stroke="%s"/><text x="%.1f" y="%d" fill="%s" text-anchor="%s">%s</text><title>shift at %s: %s → %s %s (%s, p=%.3f): %s</title></g>`,
			html.EscapeString(c.Commit), cx, cx, marginTop-4, marginTop+plotH, col, cx+3, marginTop-8, col, anchor, html.EscapeString(label),
			html.EscapeString(c.Commit), sc.format(c.Before), sc.format(c.After), html.EscapeString(sc.unit), pct(c.Change), c.P, c.Kind)
	}
	// The points, each a link to its commit.
	for i := range n {
		c := s.Commits[i]
		when := ""
		if t, ok := times[c]; ok {
			when = " · " + t.UTC().Format("2006-01-02 15:04")
		}
		tip := fmt.Sprintf("%s%s · median %s %s (min %s, max %s; %d runs)", shortCommit(c), when, sc.format(s.Values[i]), sc.unit, sc.format(s.Low[i]), sc.format(s.High[i]), s.Runs[i])
		circle := fmt.Sprintf(`<circle class="pt" cx="%.1f" cy="%.1f" r="2.6"><title>%s</title></circle>`, x(float64(i)), y(s.Values[i]), html.EscapeString(tip))
		if u := commitURL(c); u != "" {
			fmt.Fprintf(b, `<a href="%s">%s</a>`, html.EscapeString(u), circle)
		} else {
			b.WriteString(circle)
		}
	}
	// X axis: the first, last and three commits between (labels of ~120
	// units, far enough apart not to overlap).
	for _, i := range xTicks(n, 5) {
		label := shortCommit(s.Commits[i])
		if t, ok := times[s.Commits[i]]; ok {
			label += " " + t.UTC().Format("Jan 2")
		}
		anchor := "middle"
		if i == 0 {
			anchor = "start"
		} else if i == n-1 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(float64(i)), chartH-12, anchor, html.EscapeString(label))
	}
	out.WriteString(c.SVG(s.Unit+" of "+s.Benchmark, fmt.Sprintf(` width="%d" height="%d" data-points="%d" data-changes="%d"`, chartW, chartH, n, len(s.Changes))))
	out.WriteString("\n")
}

// xTicks returns up to k point indexes spread over n points.
func xTicks(n, k int) []int {
	if n == 0 {
		return nil
	}
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, k)
	for j := range k {
		out[j] = j * (n - 1) / (k - 1)
	}
	return out
}

func shortCommit(c string) string {
	if len(c) > 10 {
		return c[:10]
	}
	return c
}

func pct(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*f)
}
