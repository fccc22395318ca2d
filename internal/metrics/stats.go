package metrics

import (
	"slices"
	"time"

	"github.com/servegate/servegate/internal/stats"
)

// The summaries in this file reproduce numpy's float64 reductions bit
// for bit: the mean, the population standard deviation, the percentiles
// and the median all come from internal/stats. vLLM's rule for empty
// input, np.mean(x or 0), is applied here.

// mean is np.mean(xs or 0): 0 for an empty slice.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Mean(xs)
}

// std is np.std(xs or 0): 0 for an empty slice.
func std(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Std(xs)
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
