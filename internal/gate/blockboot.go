package gate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/servegate/servegate/internal/stats"
)

// A RequestPair is request i of one paired run: the same request of the
// same arrival schedule, sent to base and to head at the same moment
// (benchtest/paired.go), so that both sides met the same machine noise.
type RequestPair struct {
	// Start is the request's scheduled start offset from the start of
	// the run, in seconds; it orders the requests in time.
	Start float64
	// Base and Head are the request's gated value on each side, in the
	// figure's unit (seconds for TTFT).
	Base, Head float64
}

// A PairEstimate is one paired run's estimate of the change of a gated
// figure: D is log(head figure / base figure), SE its standard error
// from the block bootstrap of the run's request pairs.
type PairEstimate struct {
	// D is the log ratio of the two sides' figures (0.0488 is +5%).
	D float64 `json:"d"`
	// SE is the bootstrap standard error of D, in the same log units.
	SE float64 `json:"se"`
	// Requests is the number of request pairs, Block the block length
	// in requests that the bootstrap resampled.
	Requests int `json:"requests"`
	Block    int `json:"block"`
}

// BootstrapReps is the default number of bootstrap replicates per run:
// enough for a standard error (Efron and Tibshirani put 200 as the
// usual upper need for one), few enough for the gate's budget.
const BootstrapReps = 400

// minBootstrapRequests is the fewest request pairs a run may have for
// its bootstrap: below it a p99 is the maximum of the run, whose
// bootstrap distribution is degenerate.
const minBootstrapRequests = 50

// blockLength is the bootstrap's block length for the per-request log
// differences x (head over base, in time order): the larger of sqrt(n)
// and twice the lag at which their autocorrelation first falls below
// 2/sqrt(n) (the usual band of no correlation), at most n/4 so that a
// run keeps four blocks. The differences are what the paired figure's
// noise is made of; noise that lasts many requests (one side's GC
// pauses, a scheduler that favours one process for a while) shows as
// their correlation, and a block shorter than it would count a burst as
// many independent requests, underestimating the variance, which turns
// into false fails. sqrt(n) is the floor because a block too long only
// costs some precision.
func blockLength(x []float64) int {
	n := len(x)
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

// BootstrapPair estimates the change of the q-quantile of a gated
// per-request value (q = 0.99 for p99 TTFT) between the two sides of one
// paired run: D = log(head's quantile / base's quantile), and its
// standard error from a circular moving-block bootstrap over time.
//
// The request pairs are sorted by start offset; a replicate draws
// ceil(n/b) blocks of b consecutive pairs (wrapping around the end) with
// replacement, keeps the first n pairs drawn, and recomputes both
// sides' quantiles from the same drawn pairs. Resampling whole pairs
// keeps what base and head share (the same prompt, the same moment of
// machine noise); resampling blocks of them keeps the correlation in
// time (a burst of load lifts many consecutive requests), which an
// i.i.d. bootstrap would count as independent evidence. The figure of a
// replicate is the same statistic as the run's (a p99 stays a p99 of n
// requests, interpolated the same way), and the standard error is the
// standard deviation of the replicates' log ratios. reps <= 0 means
// BootstrapReps; block <= 0 means blockLength of the per-request log
// differences; a nil rng means a constantly seeded one.
//
// The median (q = 0.5) is estimated the paired way: D is the median of
// the per-request log ratios log(head/base), the change the typical
// request saw, and a replicate takes the median of the log ratios it
// drew. For a change that scales every request's value (a slower engine
// step, a slower decode) this is the change of the median. It is far
// less noisy than the ratio of the two sides' medians: a request's
// base and head share its prompt and its moment of load, and the ratio
// cancels them, where the two medians are each set by whichever
// requests happen to sit in the middle of that side. Measured on the
// shipped suite's A/A pairs (docs/logs/2026-12-06-median.md): the
// spread of a pair's median TTFT estimate fell from 0.6–3.3% to
// 0.1–1.9%, scenario by scenario. A high quantile has no such paired
// form (the q-quantile of the ratios is not the change of the tail), so
// a p99 stays the ratio of the two sides' p99s.
//
// A replicate costs O(n): each side's values are ranked once, and a
// replicate only counts how often it drew each rank.
func BootstrapPair(pairs []RequestPair, q float64, reps, block int, rng *rand.Rand) (PairEstimate, error) {
	n := len(pairs)
	if !(q >= 0 && q <= 1) {
		return PairEstimate{}, fmt.Errorf("bootstrap: quantile %v: want 0 <= q <= 1", q)
	}
	if n < minBootstrapRequests {
		return PairEstimate{}, fmt.Errorf("bootstrap: %d request pairs, want at least %d: a high percentile of so few requests is the run's maximum, whose uncertainty a bootstrap cannot estimate", n, minBootstrapRequests)
	}
	for i, p := range pairs {
		if !(p.Base > 0) || !(p.Head > 0) || math.IsInf(p.Base, 0) || math.IsInf(p.Head, 0) || math.IsNaN(p.Start) {
			return PairEstimate{}, fmt.Errorf("bootstrap: request %d: base %v, head %v at %v s: want positive finite values", i, p.Base, p.Head, p.Start)
		}
	}
	ps, reps, rng := inTimeOrder(pairs, reps, rng)
	if block <= 0 {
		x := make([]float64, n)
		for i, p := range ps {
			x[i] = math.Log(p.Head / p.Base)
		}
		block = blockLength(x)
	}
	block = min(block, n)
	if q == 0.5 {
		return bootstrapMedianRatio(ps, reps, block, rng), nil
	}
	bs, rankB := ranked(ps, func(p RequestPair) float64 { return p.Base })
	hs, rankH := ranked(ps, func(p RequestPair) float64 { return p.Head })
	d, err := logRatio(stats.QuantileSorted(bs, q), stats.QuantileSorted(hs, q))
	if err != nil {
		return PairEstimate{}, err
	}
	cntB, cntH := make([]int, n), make([]int, n)
	var sum, sumSq float64
	for r := 0; r < reps; r++ {
		clear(cntB)
		clear(cntH)
		drawBlocks(n, block, rng, func(i int) {
			cntB[rankB[i]]++
			cntH[rankH[i]]++
		})
		x, err := logRatio(stats.QuantileCounted(bs, cntB, n, q), stats.QuantileCounted(hs, cntH, n, q))
		if err != nil {
			return PairEstimate{}, err
		}
		sum += x
		sumSq += x * x
	}
	return PairEstimate{D: d, SE: replicateSD(sum, sumSq, reps), Requests: n, Block: block}, nil
}

// bootstrapMedianRatio is BootstrapPair's median: the median of the
// pairs' log ratios, and the standard deviation of that median over
// block-bootstrap replicates. ps is in time order, block in [1, n].
func bootstrapMedianRatio(ps []RequestPair, reps, block int, rng *rand.Rand) PairEstimate {
	n := len(ps)
	xs, rank := ranked(ps, func(p RequestPair) float64 { return math.Log(p.Head / p.Base) })
	cnt := make([]int, n)
	var sum, sumSq float64
	for r := 0; r < reps; r++ {
		clear(cnt)
		drawBlocks(n, block, rng, func(i int) { cnt[rank[i]]++ })
		x := stats.QuantileCounted(xs, cnt, n, 0.5)
		sum += x
		sumSq += x * x
	}
	return PairEstimate{D: stats.QuantileSorted(xs, 0.5), SE: replicateSD(sum, sumSq, reps), Requests: n, Block: block}
}

// drawBlocks draws one circular moving-block replicate of n request
// pairs: blocks of block consecutive indices (wrapping around the end)
// from uniform starts, until n are drawn, and calls visit with each.
func drawBlocks(n, block int, rng *rand.Rand, visit func(i int)) {
	for drawn := 0; drawn < n; {
		s := rng.IntN(n)
		for j := 0; j < block && drawn < n; j++ {
			visit((s + j) % n)
			drawn++
		}
	}
}

// ranked returns the values of ps sorted, and the rank of each pair's
// value in that order (ties broken by time order).
func ranked(ps []RequestPair, value func(RequestPair) float64) ([]float64, []int) {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return value(ps[idx[a]]) < value(ps[idx[b]]) })
	sorted, rank := make([]float64, len(ps)), make([]int, len(ps))
	for r, i := range idx {
		sorted[r], rank[i] = value(ps[i]), r
	}
	return sorted, rank
}

// replicateSD is the sample standard deviation of reps bootstrap
// replicates from their sum and sum of squares: the standard error.
func replicateSD(sum, sumSq float64, reps int) float64 {
	mean := sum / float64(reps)
	return math.Sqrt(math.Max(0, (sumSq-float64(reps)*mean*mean)/float64(reps-1)))
}

// logRatio is log(head/base) of two figures, an error unless both are
// positive and finite.
func logRatio(base, head float64) (float64, error) {
	if !(base > 0) || !(head > 0) || math.IsInf(base, 0) || math.IsInf(head, 0) {
		return 0, errors.New("bootstrap: a figure is not positive and finite (base " + fmt.Sprint(base) + ", head " + fmt.Sprint(head) + ")")
	}
	return math.Log(head / base), nil
}

// BootstrapCount estimates the change of a count-based rate, goodput,
// between the two sides of one paired run: D = log(sum of head's weights
// / sum of base's) + offset, offset being log(base's duration / head's)
// for goodput over the whole run (0 over a steady-state window, whose
// span both sides share), and its standard error from the same circular
// moving-block bootstrap over time as BootstrapPair (whole request pairs
// in blocks, so that what the sides share and the correlation in time
// are kept). The weights are 1 for a request that counted (met every
// goodput SLO), 0 for one that did not. A replicate whose sum is 0 on a
// side counts half a request there, so that its log stays finite.
// Base's sum must be positive; head's 0 is an error the caller judges
// (no request met the SLO: a regression, not noise). The durations do
// not vary in the bootstrap: the spread between pairs sees their noise.
func BootstrapCount(pairs []RequestPair, offset float64, reps, block int, rng *rand.Rand) (PairEstimate, error) {
	n := len(pairs)
	if n < minBootstrapRequests {
		return PairEstimate{}, fmt.Errorf("bootstrap: %d requests, want at least %d", n, minBootstrapRequests)
	}
	if math.IsNaN(offset) || math.IsInf(offset, 0) {
		return PairEstimate{}, fmt.Errorf("bootstrap: duration log ratio %v: want a finite number", offset)
	}
	var sb, sh float64
	for i, p := range pairs {
		if !(p.Base >= 0 && p.Head >= 0) || math.IsInf(p.Base, 0) || math.IsInf(p.Head, 0) || math.IsNaN(p.Start) {
			return PairEstimate{}, fmt.Errorf("bootstrap: request %d: weights base %v, head %v at %v s: want finite weights >= 0", i, p.Base, p.Head, p.Start)
		}
		sb += p.Base
		sh += p.Head
	}
	if !(sb > 0) {
		return PairEstimate{}, errors.New("bootstrap: no request of base counted: a rate of 0 cannot be compared")
	}
	if !(sh > 0) {
		return PairEstimate{}, errNoHeadCount
	}
	ps, reps, rng := inTimeOrder(pairs, reps, rng)
	if block <= 0 {
		x := make([]float64, n)
		for i, p := range ps {
			x[i] = p.Head - p.Base
		}
		block = blockLength(x)
	}
	block = min(block, n)
	d := math.Log(sh/sb) + offset
	var sum, sumSq float64
	for r := 0; r < reps; r++ {
		var rb, rh float64
		drawBlocks(n, block, rng, func(i int) {
			rb += ps[i].Base
			rh += ps[i].Head
		})
		x := math.Log(math.Max(rh, 0.5) / math.Max(rb, 0.5))
		sum += x
		sumSq += x * x
	}
	return PairEstimate{D: d, SE: replicateSD(sum, sumSq, reps), Requests: n, Block: block}, nil
}

// errNoHeadCount is BootstrapCount's error when no request of head
// counted while base's did.
var errNoHeadCount = errors.New("bootstrap: no request of head counted, while base's did")

// inTimeOrder is the bootstrap's common set-up: a copy of pairs sorted by
// start time (blocks are runs in time), and the default replicate count
// and generator when none is given.
func inTimeOrder(pairs []RequestPair, reps int, rng *rand.Rand) ([]RequestPair, int, *rand.Rand) {
	if reps <= 0 {
		reps = BootstrapReps
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(1, 27))
	}
	ps := make([]RequestPair, len(pairs))
	copy(ps, pairs)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Start < ps[j].Start })
	return ps, reps, rng
}
