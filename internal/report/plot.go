package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/servegate/servegate/internal/metrics"
)

// PerSecondSeries returns the output tokens and the concurrent requests of
// each one-second bucket of a run, as metrics.PerSecond counts them (the
// buckets whose largest values are the summary's peak metrics).
func PerSecondSeries(records []metrics.Record) (tokens, concurrent []float64) {
	return metrics.PerSecond(records)
}

// A TermPlot is a line chart drawn in a terminal with box-drawing
// characters, in place of vLLM's termplotlib plot (which needs gnuplot).
type TermPlot struct {
	// Title is printed centred above the chart.
	Title string
	// XLabel names the x unit, printed after the last x tick ("s").
	XLabel string
	// Width is the plot area in columns. Default 60.
	Width int
	// Height is the plot area in rows. Default 10.
	Height int
}

// WriteTermPlot draws ys (one value per x step, x starting at 0) as a
// line chart. The y axis starts at 0 unless a value is negative. When
// there are more points than columns, a column shows the largest value
// of the points it covers, so peaks stay visible.
func WriteTermPlot(w io.Writer, p TermPlot, ys []float64) error {
	width, height := p.Width, p.Height
	if width <= 0 {
		width = 60
	}
	if height <= 0 {
		height = 10
	}
	if len(ys) == 0 {
		_, err := fmt.Fprintf(w, "%s: no data\n", p.Title)
		return err
	}
	if len(ys) < width {
		width = min(width, max(20, 2*len(ys)))
	}
	cols := resample(ys, width)
	lo, hi := 0.0, 0.0
	for _, v := range ys {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if hi == lo {
		hi = lo + 1
	}
	integral := true // counts get whole-number labels, one row per count at most
	for _, v := range ys {
		integral = integral && v == math.Trunc(v)
	}
	if integral && hi-lo < float64(height-1) {
		height = max(2, int(hi-lo)+1)
	}
	row := func(v float64) int { return int(math.Round((v - lo) / (hi - lo) * float64(height-1))) }

	grid := make([][]rune, height)
	for i := range grid {
		grid[i] = []rune(strings.Repeat(" ", width))
	}
	prev := row(cols[0])
	for c, v := range cols {
		cur := row(v)
		switch {
		case c == 0 || cur == prev:
			grid[cur][c] = '─'
		case cur > prev:
			grid[prev][c] = '╯'
			grid[cur][c] = '╭'
			for r := prev + 1; r < cur; r++ {
				grid[r][c] = '│'
			}
		default:
			grid[prev][c] = '╮'
			grid[cur][c] = '╰'
			for r := cur + 1; r < prev; r++ {
				grid[r][c] = '│'
			}
		}
		prev = cur
	}

	labelW := 0
	labels := make([]string, height)
	for r := range labels {
		v := lo + (hi-lo)*float64(r)/float64(height-1)
		if integral {
			v = math.Round(v)
		}
		labels[r] = formatTick(v)
		labelW = max(labelW, len(labels[r]))
	}
	var b strings.Builder
	if p.Title != "" {
		pad := max(0, (labelW+2+width-len(p.Title))/2)
		b.WriteString(strings.Repeat(" ", pad) + p.Title + "\n")
	}
	for r := height - 1; r >= 0; r-- {
		fmt.Fprintf(&b, "%*s ┤%s\n", labelW, labels[r], strings.TrimRight(string(grid[r]), " "))
	}
	fmt.Fprintf(&b, "%*s └%s\n", labelW, "", strings.Repeat("─", width))
	b.WriteString(xTicks(labelW+2, width, len(ys), p.XLabel))
	_, err := io.WriteString(w, b.String())
	return err
}

// resample maps n points onto width columns, taking the largest value of
// the points a column covers, or repeating points when n < width.
func resample(ys []float64, width int) []float64 {
	out := make([]float64, width)
	n := len(ys)
	for c := range out {
		from := c * n / width
		to := max((c+1)*n/width, from+1)
		m := ys[from]
		for _, v := range ys[from:to] {
			m = math.Max(m, v)
		}
		out[c] = m
	}
	return out
}

// xTicks labels the first, middle and last x steps under the axis.
func xTicks(indent, width, n int, unit string) string {
	line := []rune(strings.Repeat(" ", indent+width+8))
	put := func(col int, s string) {
		col = min(max(col, 0), len(line)-len(s))
		copy(line[col:], []rune(s))
	}
	put(indent, "0")
	if n > 2 {
		put(indent+width/2-1, fmt.Sprint((n-1)/2))
	}
	last := fmt.Sprint(n - 1)
	if unit != "" {
		last += " " + unit
	}
	if n > 1 {
		put(indent+width-1, last)
	}
	return strings.TrimRight(string(line), " ") + "\n"
}

// formatTick prints an axis value compactly.
func formatTick(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// WriteThroughputPlots draws the two plots vllm bench serve shows after a
// run: output tokens per second and concurrent requests per second.
func WriteThroughputPlots(w io.Writer, records []metrics.Record) error {
	tokens, concurrent := PerSecondSeries(records)
	if len(tokens) == 0 {
		return nil
	}
	if err := WriteTermPlot(w, TermPlot{Title: "Output tokens per second", XLabel: "s"}, tokens); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return WriteTermPlot(w, TermPlot{Title: "Concurrent requests per second", XLabel: "s"}, concurrent)
}
