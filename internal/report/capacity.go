package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/servegate/servegate/internal/capacity"
)

// WriteCapacityTable writes a capacity search as an aligned text table,
// one line per step in the order run (rate, goodput, p99 TTFT, margin,
// verdict, the bounds that failed), then the result line.
func WriteCapacityTable(w io.Writer, r *capacity.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "step\trate req/s\tgoodput req/s\tp99 ttft ms\tmargin\tverdict\tfailed")
	for i, st := range r.Steps {
		v := fail
		if st.Pass {
			v = pass
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, num(st.Rate), num(st.Goodput), num(st.P99TTFT), margin(st.Margin), v, strings.Join(st.Failed, "; "))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write capacity table: %w", err)
	}
	_, err := fmt.Fprintln(w, CapacityLine(r))
	return err
}

// CapacityLine says what a search found in one line.
func CapacityLine(r *capacity.Result) string {
	s := fmt.Sprintf("max goodput rate: %s req/s", num(r.MaxRate))
	if !math.IsInf(r.MinFailRate, 1) {
		s += fmt.Sprintf(" (fails at %s; SLO edge interpolated at %s)", num(r.MinFailRate), num(r.Crossing))
	}
	s += fmt.Sprintf(", %d steps in %.1fs", len(r.Steps), r.Elapsed.Seconds())
	if r.Stopped != "" {
		s += "; stopped: " + r.Stopped
	}
	return s
}

// margin formats a step's margin as a signed percentage.
func margin(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 0):
		return "∞"
	}
	return fmt.Sprintf("%+.1f%%", 100*v)
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// capacityFigures plots a search's steps against their rate: p99 TTFT and
// goodput, passing steps as filled dots, failing ones as rings.
func capacityFigures(r *capacity.Result) []htmlFigure {
	if r == nil || len(r.Steps) == 0 {
		return nil
	}
	caption := CapacityLine(r)
	return []htmlFigure{
		{Title: "p99 TTFT against request rate", Caption: caption,
			SVG: stepsSVG("p99 TTFT against request rate", r.Steps, func(s capacity.Step) float64 { return s.P99TTFT }, "p99 TTFT (ms)", r.MaxRate)},
		{Title: "Goodput against request rate", Caption: "requests/s that met slo.goodput, per step",
			SVG: stepsSVG("Goodput against request rate", r.Steps, func(s capacity.Step) float64 { return s.Goodput }, "goodput (req/s)", r.MaxRate)},
	}
}

// stepsSVG draws one value of each step against its rate, with a dashed
// line at the capacity found.
func stepsSVG(title string, steps []capacity.Step, y func(capacity.Step) float64, yLabel string, found float64) template.HTML {
	xMax, yMax := 0.0, 0.0
	for _, s := range steps {
		if v := y(s); !math.IsNaN(v) {
			yMax = math.Max(yMax, v)
		}
		xMax = math.Max(xMax, s.Rate)
	}
	c := newSVGChart(0, xMax*1.08, 0, yMax*1.1, "request rate (req/s)", yLabel)
	c.Axes(formatTick)
	for _, s := range steps {
		v := y(s)
		if math.IsNaN(v) {
			continue
		}
		class := "dot"
		if !s.Pass {
			class = "dot fail"
		}
		fmt.Fprintf(&c.Body, `<circle class="%s" cx="%.1f" cy="%.1f" r="4"><title>%s req/s: %s (%s)</title></circle>`,
			class, c.X(s.Rate), c.Y(v), num(s.Rate), num(v), map[bool]string{true: pass, false: fail}[s.Pass])
	}
	if found > 0 {
		x := c.X(found)
		fmt.Fprintf(&c.Body, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, c.Top, x, c.H-c.Bottom)
	}
	return svg(c, title)
}
