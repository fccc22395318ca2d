package stats

import (
	"math"
	"slices"
)

// MinUTestP returns the smallest two-sided p-value the exact
// Mann-Whitney U test can give for samples of sizes n1 and n2:
// 2/C(n1+n2, n1), both samples completely apart. With four runs a
// side it is 0.029, which is why benchstat needs four at alpha 0.05.
func MinUTestP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	l1, _ := math.Lgamma(float64(n1 + 1))
	l2, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2*math.Exp(l1+l2-lc))
}

// RunsNeeded returns the fewest runs a side whose best U-test p-value
// is at most alpha.
func RunsNeeded(alpha float64) int {
	for n := 1; n < 1000; n++ {
		if MinUTestP(n, n) <= alpha {
			return n
		}
	}
	return 1000
}

// Holm returns Holm–Bonferroni adjusted p-values, in the order of ps.
// The i-th smallest p (from 0) is multiplied by m-i, made monotone and
// capped at 1. Rejecting every adjusted p ≤ alpha bounds the chance of
// any false rejection by alpha.
func Holm(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	adj := make([]float64, m)
	running := 0.0
	for rank, i := range idx {
		running = math.Max(running, math.Min(1, float64(m-rank)*ps[i]))
		adj[i] = running
	}
	return adj
}

// SignTestP is the one-sided p-value of a sign test: the chance of at
// least up of n = up+down fair coin flips landing up. It is 1 when up
// is 0. The fail-ratio rule counts requests that failed on one side
// only with it.
func SignTestP(up, down int) float64 {
	m := up + down
	if m == 0 || up == 0 {
		return 1
	}
	lm, _ := math.Lgamma(float64(m + 1))
	var p float64
	for x := up; x <= m; x++ {
		lx, _ := math.Lgamma(float64(x + 1))
		ly, _ := math.Lgamma(float64(m - x + 1))
		p += math.Exp(lm - lx - ly - float64(m)*math.Ln2)
	}
	return math.Min(1, p)
}
