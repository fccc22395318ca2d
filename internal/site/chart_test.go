package site

import (
	"math"
	"testing"
)

// TestTicksTinySpread: a series whose values differ by a float's last
// bit (20 and 20.000000000000004, as 0.1+0.2 arithmetic gives) has a
// step below the values' precision; the ticks must still end, few and
// inside the range, rather than add a step that no longer moves t.
func TestTicksTinySpread(t *testing.T) {
	for _, c := range []struct{ lo, hi float64 }{
		{20, 20.000000000000004},
		{1e6, math.Nextafter(1e6, 2e6)},
		{-3, math.Nextafter(-3, 0)},
		{0.25, 0.5},
	} {
		got := ticks(c.lo, c.hi, 5)
		if len(got) == 0 || len(got) > 11 {
			t.Errorf("ticks(%v, %v) gave %d ticks, want 1 to 11", c.lo, c.hi, len(got))
		}
		for _, v := range got {
			if v < c.lo || v > c.hi {
				t.Errorf("ticks(%v, %v): %v outside the range", c.lo, c.hi, v)
			}
		}
	}
}
