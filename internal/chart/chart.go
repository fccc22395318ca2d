// Package chart draws charts as inline SVG, with no script: a plot area
// that maps data onto the image, one rule for round tick values, the
// grid and the axes. The HTML report and the dashboard draw with it.
package chart

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// A Chart is an SVG image being drawn. Its plot area sits inside the
// margins and spans the data range given.
type Chart struct {
	// W and H are the image's size in SVG user units.
	W, H float64
	// Left, Right, Top and Bottom are the margins around the plot area.
	Left, Right, Top, Bottom float64
	// XMin, XMax, YMin and YMax are the data range the plot area spans.
	XMin, XMax, YMin, YMax float64
	// XLabel and YLabel are the axis titles that Axes writes.
	XLabel, YLabel string
	// IntX keeps only the whole x ticks, such as turn numbers.
	IntX bool
	// Class is more classes of the svg element, after "chart".
	Class string
	// Body holds the image's elements. Callers write their marks here.
	Body strings.Builder
}

// X is the horizontal image position of the data value v.
func (c *Chart) X(v float64) float64 {
	return c.Left + (v-c.XMin)/(c.XMax-c.XMin)*(c.W-c.Left-c.Right)
}

// Y is the vertical image position of the data value v.
func (c *Chart) Y(v float64) float64 {
	return c.H - c.Bottom - (v-c.YMin)/(c.YMax-c.YMin)*(c.H-c.Top-c.Bottom)
}

// YGrid draws a grid line and a label at about n round y values.
// label formats a value; Body escapes it.
func (c *Chart) YGrid(n int, label func(float64) string) {
	for _, t := range Ticks(c.YMin, c.YMax, n) {
		y := c.Y(t)
		fmt.Fprintf(&c.Body, `<line class="gridline" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, c.Left, y, c.W-c.Right, y)
		fmt.Fprintf(&c.Body, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, c.Left-6, y+4, html.EscapeString(label(t)))
	}
}

// Axes draws the y grid, the x ticks, both axis lines and their titles.
func (c *Chart) Axes(label func(float64) string) {
	c.YGrid(5, label)
	for _, t := range Ticks(c.XMin, c.XMax, 6) {
		if c.IntX && t != math.Trunc(t) {
			continue
		}
		x := c.X(t)
		fmt.Fprintf(&c.Body, `<line class="tickmark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, c.H-c.Bottom, x, c.H-c.Bottom+4)
		fmt.Fprintf(&c.Body, `<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, c.H-c.Bottom+17, html.EscapeString(label(t)))
	}
	fmt.Fprintf(&c.Body, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, c.Left, c.H-c.Bottom, c.W-c.Right, c.H-c.Bottom)
	fmt.Fprintf(&c.Body, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, c.Left, c.Top, c.Left, c.H-c.Bottom)
	fmt.Fprintf(&c.Body, `<text class="label" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (c.Left+c.W-c.Right)/2, c.H-6, html.EscapeString(c.XLabel))
	fmt.Fprintf(&c.Body, `<text class="label" transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, (c.Top+c.H-c.Bottom)/2, html.EscapeString(c.YLabel))
}

// SVG is the finished image: an svg element of class "chart" around
// Body. title is its accessible name. attrs are more attributes, each
// with a leading space, already escaped.
func (c *Chart) SVG(title, attrs string) string {
	class := "chart"
	if c.Class != "" {
		class += " " + html.EscapeString(c.Class)
	}
	return fmt.Sprintf(`<svg class="%s" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg"%s>%s</svg>`,
		class, c.W, c.H, html.EscapeString(title), attrs, c.Body.String())
}

// Ticks returns about n round values inside [lo, hi]: whole multiples
// of a step of 1, 2, 2.5 or 5 times a power of ten, the smallest that
// gives at most n+1 ticks. A range of no width, or
// one narrower than its values' precision, gets a single tick.
func Ticks(lo, hi float64, n int) []float64 {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) || n < 1 {
		return []float64{lo}
	}
	mag := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if span/(mag*m) <= float64(n) {
			step = m * mag
			break
		}
	}
	// Count in whole steps: t += step would not move t where the step
	// is below the values' precision, and the loop would never end.
	first, last := math.Ceil(lo/step), math.Floor(hi/step)
	if lo+step == lo || hi+step == hi || !(last-first <= 4*float64(n)) {
		return []float64{lo + span/2}
	}
	var out []float64
	for i := first; i <= last; i++ {
		if t := i * step; t >= lo && t <= hi {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		out = append(out, lo+span/2)
	}
	return out
}
