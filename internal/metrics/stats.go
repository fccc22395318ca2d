package metrics

import (
	"math"
	"slices"
	"time"

	"github.com/servegate/servegate/internal/stats"
)

// The functions in this file reproduce numpy's float64 reductions bit for
// bit where that is cheap: sums use numpy's pairwise summation (blocks of
// 128 with eight accumulators), the standard deviation is the population
// one computed in two passes like np.std, and percentiles and medians
// come from internal/stats, which matches numpy's in the last bit.

// pairwiseBlock is numpy's PW_BLOCKSIZE.
const pairwiseBlock = 128

// pairwiseSum adds xs in the order numpy's add.reduce does for a
// contiguous float64 array.
func pairwiseSum(xs []float64) float64 {
	n := len(xs)
	switch {
	case n < 8:
		var s float64
		for _, x := range xs {
			s += x
		}
		return s
	case n <= pairwiseBlock:
		var r [8]float64
		copy(r[:], xs[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			r[0] += xs[i]
			r[1] += xs[i+1]
			r[2] += xs[i+2]
			r[3] += xs[i+3]
			r[4] += xs[i+4]
			r[5] += xs[i+5]
			r[6] += xs[i+6]
			r[7] += xs[i+7]
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += xs[i]
		}
		return s
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(xs[:n2]) + pairwiseSum(xs[n2:])
	}
}

// mean is np.mean(xs or 0): 0 for an empty slice.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return pairwiseSum(xs) / float64(len(xs))
}

// std is np.std(xs or 0), the population standard deviation. The squared
// deviations are summed in numpy's pairwise order without being stored.
func std(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := mean(xs)
	return math.Sqrt(pairwiseSqDev(xs, m) / float64(len(xs)))
}

// pairwiseSqDev is pairwiseSum of (x-m)² over xs.
func pairwiseSqDev(xs []float64, m float64) float64 {
	n := len(xs)
	sq := func(x float64) float64 { d := x - m; return d * d }
	switch {
	case n < 8:
		var s float64
		for _, x := range xs {
			s += sq(x)
		}
		return s
	case n <= pairwiseBlock:
		var r [8]float64
		for j := range r {
			r[j] = sq(xs[j])
		}
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += sq(xs[i+j])
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += sq(xs[i])
		}
		return s
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSqDev(xs[:n2], m) + pairwiseSqDev(xs[n2:], m)
	}
}

// A Stats holds the summary statistics of one latency metric in
// milliseconds, as vLLM reports them, and keeps the sorted samples (in
// seconds) so that any percentile can be asked for later.
type Stats struct {
	// Mean, Median and Std (population) in milliseconds.
	Mean, Median, Std float64
	// Count is the number of samples.
	Count int
	// sorted holds the samples in seconds, ascending.
	sorted []float64
}

// newStats summarises samples given in seconds; xs keeps its order (the
// mean depends on it) and is not modified.
func newStats(xs []float64) Stats {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return statsOf(xs, sorted)
}

// newDurationStats summarises durations. It sorts the integer durations
// (a radix sort, much faster than sorting floats for the million ITL
// samples of a long run) and converts afterwards: the conversion is
// monotonic, so the sorted seconds are the same.
func newDurationStats(ds []time.Duration) Stats {
	xs := make([]float64, len(ds))
	keys := make([]uint64, len(ds))
	for i, d := range ds {
		xs[i] = seconds(d)
		keys[i] = uint64(d) ^ (1 << 63) // order negative before positive
	}
	radixSort(keys)
	sorted := make([]float64, len(ds))
	for i, k := range keys {
		sorted[i] = seconds(time.Duration(k ^ (1 << 63)))
	}
	return statsOf(xs, sorted)
}

func statsOf(xs, sorted []float64) Stats {
	return Stats{
		Mean:   mean(xs) * 1000,
		Median: medianMS(sorted),
		Std:    std(xs) * 1000,
		Count:  len(xs),
		sorted: sorted,
	}
}

// medianMS is np.median of ascending seconds, in milliseconds. An empty
// sample reports 0, as vLLM's np.median(x or 0) does.
func medianMS(sorted []float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return stats.MedianSorted(sorted) * 1000
}

// radixSort sorts keys ascending: LSD on bytes, skipping the byte
// positions where every key agrees (the high bytes of durations).
func radixSort(keys []uint64) {
	if len(keys) < 256 {
		slices.Sort(keys)
		return
	}
	// One pass finds the bytes that differ between keys; the others need
	// neither a count nor a scatter.
	and, or := ^uint64(0), uint64(0)
	for _, k := range keys {
		and &= k
		or |= k
	}
	differ := and ^ or
	buf := make([]uint64, len(keys))
	src, dst := keys, buf
	for shift := uint(0); shift < 64; shift += 8 {
		if byte(differ>>shift) == 0 {
			continue
		}
		var count [256]int
		for _, k := range src {
			count[byte(k>>shift)]++
		}
		pos := 0
		for b := range count {
			c := count[b]
			count[b] = pos
			pos += c
		}
		for _, k := range src {
			b := byte(k >> shift)
			dst[count[b]] = k
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) in milliseconds,
// computed like np.percentile(samples, p) * 1000.
func (s Stats) Percentile(p float64) float64 {
	if len(s.sorted) == 0 {
		return 0 // vLLM's np.percentile(x or 0, p)
	}
	return stats.QuantileSorted(s.sorted, p/100) * 1000
}
