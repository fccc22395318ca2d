package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// ChangePermutations is the permutation count of each test of
// ChangePoints: the smallest p-value it can give is 1/500.
const ChangePermutations = 499

// A ChangePoint splits a series: x[Index] is the first value after the
// change.
type ChangePoint struct {
	Index int
	// Q is the split's score; P its permutation test's p-value.
	Q, P float64
}

// ChangePoints returns the significant change points of x at level
// alpha, in index order, by E-divisive means (Matteson and James, 2014),
// as Apache Otava runs it. A split of a segment into X and Y scores
//
//	Q = l·r/(l+r) · (2/(l·r) Σ|x−y| − Σ|x−x'|/C(l,2) − Σ|y−y'|/C(r,2))
//
// with l = |X| and r = |Y|. The best split is kept when a permutation
// test finds it significant, and the search recurses. Y may end before
// the segment does, so a shift that later reverts is found.
// Segments shorter than 2·minSeg are never split. The permutation tests draw from seed, so one input gives one answer.
// Each test costs ChangePermutations times len(x)² distances.
func ChangePoints(x []float64, alpha float64, minSeg int, seed uint64) []ChangePoint {
	rng := rand.New(rand.NewPCG(seed, 0x5e7e6a7e))
	var sc splitter
	bounds := []int{0, len(x)} // segment boundaries, sorted
	var found []ChangePoint
	for {
		best, bestQ, lo, hi := -1, math.Inf(-1), 0, 0
		for i := 0; i+1 < len(bounds); i++ {
			a, b := bounds[i], bounds[i+1]
			if tau, q := sc.best(x[a:b], minSeg); tau > 0 && q > bestQ {
				best, bestQ, lo, hi = a+tau, q, a, b
			}
		}
		if best < 0 {
			break
		}
		p := sc.permutationP(x[lo:hi], bestQ, minSeg, alpha, rng)
		if p > alpha {
			break
		}
		found = append(found, ChangePoint{Index: best, Q: bestQ, P: p})
		bounds = append(bounds, best)
		slices.Sort(bounds)
	}
	slices.SortFunc(found, func(a, b ChangePoint) int { return a.Index - b.Index })
	return found
}

// A splitter finds best splits, reusing its buffers.
type splitter struct {
	// sum[a*(n+1)+b] = Σ_{i<a, j<b} |x_i − x_j|: a block of the
	// distance matrix is then four lookups.
	sum  []float64
	perm []float64
}

// permutationP is the share of random orders of seg (plus the observed
// one) whose best split scores at least q. It stops early once that
// share is sure to exceed alpha, and then returns a p-value above alpha
// that is a lower bound of the full one: the split is not significant
// either way, and a long history's last, failing test costs a fraction.
func (s *splitter) permutationP(seg []float64, q float64, minSeg int, alpha float64, rng *rand.Rand) float64 {
	s.perm = append(s.perm[:0], seg...)
	perm := s.perm
	atLeast := 1
	for range ChangePermutations {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if _, pq := s.best(perm, minSeg); pq >= q {
			atLeast++
			if p := float64(atLeast) / float64(ChangePermutations+1); p > alpha {
				return p
			}
		}
	}
	return float64(atLeast) / float64(ChangePermutations+1)
}

// best returns the change τ of x with the highest score Q(τ, κ) over
// every κ (minSeg ≤ τ, τ+minSeg ≤ κ ≤ len(x)), or -1 when x is too
// short. It takes O(n²) time and space.
func (s *splitter) best(x []float64, minSeg int) (int, float64) {
	n := len(x)
	minSeg = max(minSeg, 2) // each part needs a pair for its mean distance
	if n < 2*minSeg {
		return -1, 0
	}
	w := n + 1
	if cap(s.sum) < w*w {
		s.sum = make([]float64, w*w)
	}
	sum := s.sum[:w*w]
	for b := range w {
		sum[b] = 0
	}
	for a := 1; a <= n; a++ {
		row := 0.0
		sum[a*w] = 0
		for b := 1; b <= n; b++ {
			row += math.Abs(x[a-1] - x[b-1])
			sum[a*w+b] = sum[(a-1)*w+b] + row
		}
	}
	// block is Σ over i in [a0,a1), j in [b0,b1) of |x_i − x_j|.
	block := func(a0, a1, b0, b1 int) float64 {
		return sum[a1*w+b1] - sum[a0*w+b1] - sum[a1*w+b0] + sum[a0*w+b0]
	}
	best, bestQ := -1, math.Inf(-1)
	for t := minSeg; t <= n-minSeg; t++ {
		l := float64(t)
		withinX := block(0, t, 0, t) / 2 / (l * (l - 1) / 2)
		for k := t + minSeg; k <= n; k++ {
			r := float64(k - t)
			cross := block(0, t, t, k)
			withinY := block(t, k, t, k) / 2 / (r * (r - 1) / 2)
			if q := l * r / (l + r) * (2*cross/(l*r) - withinX - withinY); q > bestQ {
				best, bestQ = t, q
			}
		}
	}
	return best, bestQ
}
