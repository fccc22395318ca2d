package stats

import (
	"math"
	"sort"
)

// signedRankExactMax is the largest number of non-zero differences for
// which SignedRank computes the exact null distribution (R's wilcox.test
// uses the same bound); above it, or with ties, it uses the normal
// approximation.
const signedRankExactMax = 50

// SignedRank is Wilcoxon's signed-rank test of the hypothesis that the
// differences d are symmetric about 0, two-sided, computed as R's
// wilcox.test(d) computes it: zeros are dropped (Wilcoxon's method), the
// absolute differences are ranked (ties get their average rank), and V is
// the sum of the ranks of the positive differences. Without ties and with
// at most signedRankExactMax differences the p-value is exact (the
// distribution of V under the null hypothesis, counted over all 2^n sign
// patterns); otherwise it is the normal approximation with R's tie and
// continuity corrections. n is the number of non-zero differences; with
// none, p is 1. Infinite differences (a ratio with a zero side) rank
// above every finite one.
func SignedRank(d []float64) (v float64, n int, p float64) {
	abs := make([]float64, 0, len(d))
	pos := make([]bool, 0, len(d))
	for _, x := range d {
		if x == 0 || math.IsNaN(x) {
			continue
		}
		abs = append(abs, math.Abs(x))
		pos = append(pos, x > 0)
	}
	n = len(abs)
	if n == 0 {
		return 0, 0, 1
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return abs[idx[a]] < abs[idx[b]] })
	rank := make([]float64, n)
	ties := 0.0 // sum of t^3 - t over groups of t tied values
	for i := 0; i < n; {
		j := i
		for j+1 < n && abs[idx[j+1]] == abs[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			rank[idx[k]] = float64(i+j)/2 + 1
		}
		if t := float64(j - i + 1); t > 1 {
			ties += t*t*t - t
		}
		i = j + 1
	}
	for i, r := range rank {
		if pos[i] {
			v += r
		}
	}
	if ties == 0 && n <= signedRankExactMax {
		return v, n, signedRankExactP(v, n)
	}
	nf := float64(n)
	z := v - nf*(nf+1)/4
	sigma := math.Sqrt(nf*(nf+1)*(2*nf+1)/24 - ties/48)
	if sigma == 0 {
		return v, n, 1
	}
	corr := 0.0
	switch {
	case z > 0:
		corr = 0.5
	case z < 0:
		corr = -0.5
	}
	z = (z - corr) / sigma
	p = 2 * math.Min(NormalCDF(z), NormalCDF(-z))
	return v, n, math.Min(1, p)
}

// signedRankExactP returns the exact two-sided p-value of the integer
// signed-rank statistic v with n differences: 2 min(P(V <= v), P(V >= v)),
// capped at 1. count[s] is the number of subsets of {1..n} whose sum is
// s, which is the number of sign patterns that give V = s.
func signedRankExactP(v float64, n int) float64 {
	maxSum := n * (n + 1) / 2
	count := make([]float64, maxSum+1)
	count[0] = 1
	for k := 1; k <= n; k++ {
		for s := maxSum; s >= k; s-- {
			count[s] += count[s-k]
		}
	}
	total := math.Ldexp(1, n)
	vi := int(math.Round(v))
	lo, hi := 0.0, 0.0
	for s, c := range count {
		if s <= vi {
			lo += c
		}
		if s >= vi {
			hi += c
		}
	}
	return math.Min(1, 2*math.Min(lo, hi)/total)
}

// MinSignedRankP is the smallest two-sided p-value the exact signed-rank
// test can give with n pairs: every difference of one sign, 2/2^n. Six
// pairs give 0.031, five only 0.0625: the paired gate needs at least 6
// pairs at alpha 0.05.
func MinSignedRankP(n int) float64 {
	return math.Min(1, 2/math.Ldexp(1, n))
}

// PairsNeeded returns the smallest number of pairs whose best possible
// signed-rank p-value is at most alpha.
func PairsNeeded(alpha float64) int {
	for n := 1; n < 1000; n++ {
		if MinSignedRankP(n) <= alpha {
			return n
		}
	}
	return 1000
}
