package stats

import (
	"math"
	"slices"
	"testing"
)

// The wanted values were printed by numpy 2.4.6 with
// repr(float(np.percentile(xs, p))) and repr(float(np.median(xs))).
// Tests compare with ==: numpy's rounding is part of the contract.

func TestQuantileMatchesNumpy(t *testing.T) {
	cases := []struct {
		xs   []float64
		p    float64 // np.percentile's p; Quantile gets p/100
		want float64
	}{
		{[]float64{1, 2, 3, 4}, 0, 1.0},
		{[]float64{1, 2, 3, 4}, 25, 1.75},
		{[]float64{1, 2, 3, 4}, 50, 2.5},
		{[]float64{1, 2, 3, 4}, 90, 3.7},
		{[]float64{1, 2, 3, 4}, 99, 3.9699999999999998},
		{[]float64{1, 2, 3, 4}, 100, 4.0},
		{[]float64{3, 1, 4, 1, 5, 9, 2, 6}, 10, 1.0},
		{[]float64{3, 1, 4, 1, 5, 9, 2, 6}, 50, 3.5},
		{[]float64{3, 1, 4, 1, 5, 9, 2, 6}, 75, 5.25},
		{[]float64{3, 1, 4, 1, 5, 9, 2, 6}, 99, 8.79},
		{[]float64{7.5}, 0, 7.5},
		{[]float64{7.5}, 50, 7.5},
		{[]float64{7.5}, 100, 7.5},
		{[]float64{-2, -1, 0.5, 10}, 33, -1.01},
		{[]float64{-2, -1, 0.5, 10}, 66.6, 0.49699999999999966},
		{[]float64{5, 5, 5}, 50, 5.0},
		{[]float64{5, 5, 5}, 99, 5.0},
		// numpy interpolates from the upper neighbour when the fraction
		// is at least one half; a one-sided a+(b-a)·t gives 0.316 here.
		{[]float64{0.569, 0.802, 0.063}, 25, 0.31599999999999995},
		{[]float64{0.031, 0.025, 0.541, 0.939}, 95, 0.8792999999999999},
		{[]float64{0.797, 0.816, 0.255, 0.842, 0.673, 0.083}, 10, 0.169},
		{[]float64{0.995, 0.232}, 50, 0.6134999999999999},
	}
	for _, c := range cases {
		sorted := slices.Sorted(slices.Values(c.xs))
		if got := Quantile(c.xs, c.p/100); got != c.want {
			t.Errorf("Quantile(%v, %v/100) = %v, want %v", c.xs, c.p, got, c.want)
		}
		if got := QuantileSorted(sorted, c.p/100); got != c.want {
			t.Errorf("QuantileSorted(%v, %v/100) = %v, want %v", sorted, c.p, got, c.want)
		}
	}
}

func TestMedianMatchesNumpy(t *testing.T) {
	cases := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, 2.5},
		{[]float64{3, 1, 2}, 2.0},
		{[]float64{7.5}, 7.5},
		{[]float64{-1, -3}, -2.0},
		// np.median takes the mean of the middle two: it differs from
		// np.percentile(xs, 50) = 0.6134999999999999 in the last bit.
		{[]float64{0.995, 0.232}, 0.6135},
	}
	for _, c := range cases {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
		if got := MedianSorted(slices.Sorted(slices.Values(c.xs))); got != c.want {
			t.Errorf("MedianSorted(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

func TestEmptyIsNaN(t *testing.T) {
	for name, got := range map[string]float64{
		"Quantile":       Quantile(nil, 0.5),
		"QuantileSorted": QuantileSorted([]float64{}, 0.5),
		"Median":         Median(nil),
		"MedianSorted":   MedianSorted([]float64{}),
		"Quantile NaN q": Quantile([]float64{1, 2}, math.NaN()),
	} {
		if !math.IsNaN(got) {
			t.Errorf("%s = %v, want NaN", name, got)
		}
	}
}

func TestQuantileClampsQ(t *testing.T) {
	xs := []float64{3, 1, 2}
	if got := Quantile(xs, -0.5); got != 1 {
		t.Errorf("Quantile(q=-0.5) = %v, want the minimum 1", got)
	}
	if got := Quantile(xs, 1.5); got != 3 {
		t.Errorf("Quantile(q=1.5) = %v, want the maximum 3", got)
	}
}

func TestInputNotModified(t *testing.T) {
	xs := []float64{3, 1, 4, 1, 5, 9, 2, 6}
	orig := slices.Clone(xs)
	Quantile(xs, 0.9)
	Median(xs)
	if !slices.Equal(xs, orig) {
		t.Errorf("input changed to %v, want %v", xs, orig)
	}
}

// benchSample is n pseudo-random latencies in seconds.
func benchSample(n int) []float64 {
	xs := make([]float64, n)
	x := uint64(1)
	for i := range xs {
		x = x*6364136223846793005 + 1442695040888963407
		xs[i] = float64(x>>11) / (1 << 53)
	}
	return xs
}

func BenchmarkQuantile(b *testing.B) {
	xs := benchSample(10000)
	for b.Loop() {
		Quantile(xs, 0.99)
	}
}

func BenchmarkQuantileSorted(b *testing.B) {
	xs := benchSample(10000)
	slices.Sort(xs)
	for b.Loop() {
		QuantileSorted(xs, 0.99)
	}
}
