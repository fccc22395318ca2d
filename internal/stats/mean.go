package stats

import "math"

// Mean and Std reproduce np.mean and np.std of a float64 array bit for
// bit. Sums use numpy's pairwise summation: blocks of 128 with eight
// accumulators. The standard deviation is the population one, computed
// in two passes as np.std does.

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

// Mean is np.mean(xs). It is NaN for empty input, as Quantile is.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return pairwiseSum(xs) / float64(len(xs))
}

// Std is np.std(xs), the population standard deviation. The squared
// deviations are summed in numpy's pairwise order without being stored.
// It is NaN for empty input.
func Std(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m := Mean(xs)
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
