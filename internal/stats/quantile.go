// Package stats holds servegate's pure statistics: no I/O, no cgo.
//
// Quantile and Median reproduce numpy's np.quantile (default "linear"
// method) and np.median bit for bit. Quantile(xs, p/100) is
// np.percentile(xs, p), the figure vLLM's benchmark reports. Neither
// function modifies its input. Both return NaN for empty input, which
// has no quantile. A caller that reports vLLM's figures applies vLLM's
// rule, np.percentile(x or 0, p), itself.
package stats

import (
	"math"
	"slices"
)

// Quantile returns the q-quantile of xs, 0 ≤ q ≤ 1, like
// np.quantile(xs, q). It interpolates linearly between the two order
// statistics around (len(xs)-1)·q. A q outside [0, 1] is clamped. It
// returns NaN when xs is empty or q is NaN. xs is not modified. The
// values are finite: numpy's NaN for an infinite neighbour is not kept.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	return QuantileSorted(sortedCopy(xs), q)
}

// QuantileSorted is Quantile for xs already in ascending order. It
// saves the copy and the sort when one sample answers many quantiles.
func QuantileSorted(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	vi := float64(n-1) * q
	if vi >= float64(n-1) {
		return sorted[n-1]
	}
	if vi < 0 {
		return sorted[0]
	}
	lo := math.Floor(vi)
	return lerp(sorted[int(lo)], sorted[int(lo)+1], vi-lo)
}

// QuantileCounted is QuantileSorted of the multiset of m values that
// holds sorted[r] count[r] times, without building it. A bootstrap that
// redraws a sample counts how often each value is drawn and asks this.
func QuantileCounted(sorted []float64, count []int, m int, q float64) float64 {
	if m == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	// at is the value at ascending position pos of the multiset.
	at := func(pos int) float64 {
		c := 0
		for r, k := range count {
			c += k
			if c > pos {
				return sorted[r]
			}
		}
		return sorted[len(sorted)-1]
	}
	vi := float64(m-1) * q
	if vi >= float64(m-1) {
		return at(m - 1)
	}
	if vi < 0 {
		return at(0)
	}
	lo := math.Floor(vi)
	return lerp(at(int(lo)), at(int(lo)+1), vi-lo)
}

// lerp is numpy's _lerp: a + (b-a)·t, computed from b's side when
// t ≥ 0.5. The two-sided form keeps numpy's rounding in the last bit.
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

// Median returns the median of xs like np.median: the middle value, or
// the mean of the middle two when len(xs) is even. It returns NaN when
// xs is empty. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return MedianSorted(sortedCopy(xs))
}

// MedianSorted is Median for xs already in ascending order.
func MedianSorted(sorted []float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return sorted[n/2]
	default:
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
}

// sortedCopy is xs sorted into a new slice.
func sortedCopy(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}
