package gate

import (
	"math"
	"sort"
)

// minUTestP returns the smallest two-sided p-value the exact
// Mann-Whitney U test can give for samples of sizes n1 and n2: both
// samples completely separated, 2/C(n1+n2, n1). With n1 = n2 = 4 that is
// 0.0286, the reason benchstat needs at least 4 runs per side at alpha
// 0.05 (3 per side can never go below 0.1).
func minUTestP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	l1, _ := math.Lgamma(float64(n1 + 1))
	l2, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2*math.Exp(l1+l2-lc))
}

// runsNeeded returns the smallest equal per-side sample size whose best
// possible U-test p-value is at most alpha.
func runsNeeded(alpha float64) int {
	for n := 1; n < 1000; n++ {
		if minUTestP(n, n) <= alpha {
			return n
		}
	}
	return 1000
}

// holm returns Holm–Bonferroni adjusted p-values: sorted ascending, the
// i-th smallest (from 0) is multiplied by m-i, made monotone, capped at 1.
// Rejecting every hypothesis whose adjusted p is <= alpha is Holm's
// step-down procedure at family-wise error rate alpha.
func holm(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]] < ps[idx[b]] })
	adj := make([]float64, m)
	running := 0.0
	for rank, i := range idx {
		v := math.Min(1, float64(m-rank)*ps[i])
		running = math.Max(running, v)
		adj[i] = running
	}
	return adj
}
