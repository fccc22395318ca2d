package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// A Matched is one request seen on both sides of a pair of runs.
type Matched struct {
	// At orders the requests in time: the scheduled start, in seconds.
	At float64
	// Base and Head are the request's value on each side.
	Base, Head float64
}

// An Estimate is one pair's estimate of a change between base and head.
type Estimate struct {
	// D is the log ratio of head's figure to base's: 0.0488 is +5%.
	D float64 `json:"d"`
	// SE is D's standard error, in the same log units.
	SE float64 `json:"se"`
	// N is the number of requests; Block the block length resampled.
	N     int `json:"n"`
	Block int `json:"block"`
}

// DefaultReps is the default number of bootstrap replicates. Efron and
// Tibshirani put 200 as the usual need for a standard error.
const DefaultReps = 400

// A Bootstrap is a circular moving-block bootstrap over time. Each
// replicate draws blocks of consecutive requests, wrapping at the end,
// until it has as many as the run. Whole requests are drawn, so what
// both sides share stays paired. Blocks keep the correlation in time:
// a burst that lifts many requests counts once, not many times. The
// zero value works: DefaultReps replicates, BlockLength blocks and a
// generator seeded constantly.
type Bootstrap struct {
	// Reps is the number of replicates; 0 means DefaultReps.
	Reps int
	// Block is the block length in requests; 0 means BlockLength of
	// the per-request differences.
	Block int
	// Rand draws the blocks; nil means a constantly seeded generator.
	Rand *rand.Rand
}

// MinQuantileRequests returns the fewest matched requests whose
// q-quantile the bootstrap can judge: 20, and at least two requests
// beyond the quantile on its far side. A p99 needs 200.
func MinQuantileRequests(q float64) int {
	tail := math.Min(q, 1-q)
	if tail <= 0 {
		return math.MaxInt
	}
	return max(20, int(math.Ceil(2/tail-1e-9)))
}

// QuantileRatio estimates the change of the q-quantile of a per-request
// value between the sides of one pair. D is log(head's q-quantile /
// base's), each side's quantile as Quantile computes it, so the figure
// keeps its meaning. SE is the spread of D over the replicates. Both
// sides of a replicate come from the same drawn requests. Values must
// be positive and finite. A replicate costs O(n): each side is ranked
// once, and a replicate counts how often it drew each rank.
func (b Bootstrap) QuantileRatio(m []Matched, q float64) (Estimate, error) {
	n := len(m)
	if !(q >= 0 && q <= 1) {
		return Estimate{}, fmt.Errorf("bootstrap: quantile %v: want 0 <= q <= 1", q)
	}
	if need := MinQuantileRequests(q); n < need {
		return Estimate{}, &TooFewError{Have: n, Need: need}
	}
	for i, p := range m {
		if !(p.Base > 0) || !(p.Head > 0) || math.IsInf(p.Base, 0) || math.IsInf(p.Head, 0) || math.IsNaN(p.At) {
			return Estimate{}, fmt.Errorf("bootstrap: request %d: base %v, head %v at %v s: want positive finite values", i, p.Base, p.Head, p.At)
		}
	}
	ps, reps, rng := b.setUp(m)
	block := b.Block
	if block <= 0 {
		x := make([]float64, n)
		for i, p := range ps {
			x[i] = math.Log(p.Head / p.Base)
		}
		block = BlockLength(x)
	}
	block = min(block, n)
	bs, rankB := ranked(ps, func(p Matched) float64 { return p.Base })
	hs, rankH := ranked(ps, func(p Matched) float64 { return p.Head })
	d := math.Log(QuantileSorted(hs, q) / QuantileSorted(bs, q))
	cntB, cntH := make([]int, n), make([]int, n)
	var sum, sumSq float64
	for range reps {
		clear(cntB)
		clear(cntH)
		draw(n, block, rng, func(i int) {
			cntB[rankB[i]]++
			cntH[rankH[i]]++
		})
		x := math.Log(countedQuantile(hs, cntH, n, q) / countedQuantile(bs, cntB, n, q))
		sum += x
		sumSq += x * x
	}
	return Estimate{D: d, SE: spread(sum, sumSq, reps), N: n, Block: block}, nil
}

// CountRatio estimates the change of a rate between the sides of one
// pair, such as goodput. The values are weights: 1 for a request that
// counted, 0 for one that did not. D is log(head's sum / base's sum)
// plus offset, log(base's duration / head's) for a rate over the run.
// The durations are not resampled: the spread between pairs sees their
// noise. A replicate whose sum is 0 counts half a request there. Base's
// sum must be positive; a head sum of 0 is ErrNoHeadCount.
func (b Bootstrap) CountRatio(m []Matched, offset float64) (Estimate, error) {
	n := len(m)
	if n < 20 {
		return Estimate{}, &TooFewError{Have: n, Need: 20}
	}
	if math.IsNaN(offset) || math.IsInf(offset, 0) {
		return Estimate{}, fmt.Errorf("bootstrap: duration log ratio %v: want a finite number", offset)
	}
	var sb, sh float64
	for i, p := range m {
		if !(p.Base >= 0 && p.Head >= 0) || math.IsInf(p.Base, 0) || math.IsInf(p.Head, 0) || math.IsNaN(p.At) {
			return Estimate{}, fmt.Errorf("bootstrap: request %d: weights base %v, head %v at %v s: want finite weights >= 0", i, p.Base, p.Head, p.At)
		}
		sb += p.Base
		sh += p.Head
	}
	if !(sb > 0) {
		return Estimate{}, errors.New("bootstrap: no request of base counted: a rate of 0 cannot be compared")
	}
	if !(sh > 0) {
		return Estimate{}, ErrNoHeadCount
	}
	ps, reps, rng := b.setUp(m)
	block := b.Block
	if block <= 0 {
		x := make([]float64, n)
		for i, p := range ps {
			x[i] = p.Head - p.Base
		}
		block = BlockLength(x)
	}
	block = min(block, n)
	var sum, sumSq float64
	for range reps {
		var rb, rh float64
		draw(n, block, rng, func(i int) {
			rb += ps[i].Base
			rh += ps[i].Head
		})
		x := math.Log(math.Max(rh, 0.5) / math.Max(rb, 0.5))
		sum += x
		sumSq += x * x
	}
	return Estimate{D: math.Log(sh/sb) + offset, SE: spread(sum, sumSq, reps), N: n, Block: block}, nil
}

// ErrNoHeadCount is CountRatio's error when no request of head counted
// while some of base's did: a rate of 0, not noise.
var ErrNoHeadCount = errors.New("bootstrap: no request of head counted, while base's did")

// A TooFewError says a sample is too small for its estimate.
type TooFewError struct{ Have, Need int }

func (e *TooFewError) Error() string {
	return fmt.Sprintf("bootstrap: %d requests, want at least %d", e.Have, e.Need)
}

// BlockLength is the block length for per-request differences x in
// time order. It is the larger of √n and twice the lag at which their
// autocorrelation first falls below 2/√n, and at most n/4. Noise that
// lasts many requests shows as correlation. A block shorter than it
// would count one burst as many independent requests and make false
// fails. A block too long only costs some precision, hence the floor.
func BlockLength(x []float64) int {
	n := len(x)
	if n == 0 {
		return 1
	}
	b := int(math.Ceil(math.Sqrt(float64(n))))
	var mean, c0 float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	for _, v := range x {
		c0 += (v - mean) * (v - mean)
	}
	if c0 > 0 {
		band := 2 / math.Sqrt(float64(n))
		for lag := 1; lag < n/4; lag++ {
			var c float64
			for i := lag; i < n; i++ {
				c += (x[i] - mean) * (x[i-lag] - mean)
			}
			if c/c0 < band {
				b = max(b, 2*lag)
				break
			}
			if lag == n/4-1 {
				b = n / 4
			}
		}
	}
	return max(1, min(b, n/4))
}

// setUp returns a copy of m in time order and the replicates and
// generator to use.
func (b Bootstrap) setUp(m []Matched) ([]Matched, int, *rand.Rand) {
	reps, rng := b.Reps, b.Rand
	if reps <= 0 {
		reps = DefaultReps
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(1, 27))
	}
	ps := slices.Clone(m)
	slices.SortStableFunc(ps, func(a, b Matched) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return ps, reps, rng
}

// draw visits the indices of one replicate: blocks of block
// consecutive indices of 0..n-1, wrapping, n in all.
func draw(n, block int, rng *rand.Rand, visit func(i int)) {
	for drawn := 0; drawn < n; {
		s := rng.IntN(n)
		for j := 0; j < block && drawn < n; j++ {
			visit((s + j) % n)
			drawn++
		}
	}
}

// spread is the standard deviation of reps values from their sum and
// sum of squares.
func spread(sum, sumSq float64, reps int) float64 {
	mean := sum / float64(reps)
	return math.Sqrt(math.Max(0, (sumSq-float64(reps)*mean*mean)/float64(reps-1)))
}

// ranked returns the values of ps sorted, and each request's rank in
// that order, ties broken by time order.
func ranked(ps []Matched, value func(Matched) float64) ([]float64, []int) {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		va, vb := value(ps[a]), value(ps[b])
		switch {
		case va < vb:
			return -1
		case va > vb:
			return 1
		}
		return 0
	})
	sorted, rank := make([]float64, len(ps)), make([]int, len(ps))
	for r, i := range idx {
		sorted[r], rank[i] = value(ps[i]), r
	}
	return sorted, rank
}

// countedQuantile is the q-quantile, as QuantileSorted computes it, of
// the m values that hold sorted[r] count[r] times.
func countedQuantile(sorted []float64, count []int, m int, q float64) float64 {
	h := q * float64(m-1)
	lo := int(math.Floor(h))
	// at returns the value at ascending position pos.
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
	if lo >= m-1 {
		return at(m - 1)
	}
	return lerp(at(lo), at(lo+1), h-float64(lo))
}
