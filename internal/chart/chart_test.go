package chart

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 100, 5, []float64{0, 20, 40, 60, 80, 100}},
		{0, 1.7, 5, []float64{0, 0.5, 1, 1.5}},
		{0, 12, 5, []float64{0, 2.5, 5, 7.5, 10}},
		{0.3, 9.7, 5, []float64{2, 4, 6, 8}},
		{-7, 7, 5, []float64{-5, 0, 5}},
		{3, 3, 5, []float64{3}},
		{3, 1, 5, []float64{3}},
		{0.5, 6.5, 6, []float64{1, 2, 3, 4, 5, 6}},
	} {
		if got := Ticks(c.lo, c.hi, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Ticks(%v, %v, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
		}
	}
}

// TestTicksTinySpread: values a float's last bit apart have a step
// below their precision. The ticks must still end, few and in range,
// rather than add a step that no longer moves t.
func TestTicksTinySpread(t *testing.T) {
	for _, c := range []struct{ lo, hi float64 }{
		{20, 20.000000000000004},
		{1e6, math.Nextafter(1e6, 2e6)},
		{-3, math.Nextafter(-3, 0)},
		{0.25, 0.5},
		{0, math.Inf(1)},
		{math.NaN(), 1},
	} {
		got := Ticks(c.lo, c.hi, 5)
		if len(got) == 0 || len(got) > 11 {
			t.Errorf("Ticks(%v, %v) gave %d ticks, want 1 to 11", c.lo, c.hi, len(got))
		}
		for _, v := range got {
			if v < c.lo || v > c.hi {
				t.Errorf("Ticks(%v, %v): %v outside the range", c.lo, c.hi, v)
			}
		}
	}
}

func TestMapping(t *testing.T) {
	c := Chart{W: 200, H: 100, Left: 10, Right: 10, Top: 10, Bottom: 10, XMin: 0, XMax: 18, YMin: -1, YMax: 7}
	for _, p := range []struct{ got, want float64 }{
		{c.X(0), 10}, {c.X(18), 190}, {c.X(9), 100},
		{c.Y(-1), 90}, {c.Y(7), 10}, {c.Y(3), 50},
	} {
		if p.got != p.want {
			t.Errorf("got %v, want %v", p.got, p.want)
		}
	}
}

func TestSVGEscapes(t *testing.T) {
	c := Chart{W: 100, H: 50, XMax: 1, YMax: 1, XLabel: "a<b", YLabel: `"y"`}
	c.Axes(func(v float64) string { return "<" })
	svg := c.SVG("t&t", ` data-n="1"`)
	for _, bad := range []string{"a<b", `"y"`, "t&t", ">< "} {
		if strings.Contains(svg, bad) {
			t.Errorf("svg holds %q unescaped", bad)
		}
	}
	if !strings.HasPrefix(svg, `<svg class="chart" viewBox="0 0 100 50" role="img" aria-label="t&amp;t" xmlns="http://www.w3.org/2000/svg" data-n="1">`) {
		t.Errorf("svg opens %.120s", svg)
	}
}

// TestSVGClass: a chart's own classes follow "chart" in the class attribute.
func TestSVGClass(t *testing.T) {
	c := Chart{W: 10, H: 20, Class: "bars"}
	if svg := c.SVG("t", ""); !strings.HasPrefix(svg, `<svg class="chart bars" viewBox="0 0 10 20"`) {
		t.Errorf("svg opens %.60s", svg)
	}
}
