package stats

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchmath"
)

// TestMinUTestP checks the smallest attainable p-value against the U
// test benchmath runs on samples completely apart. So the "too few
// samples" rule is exactly benchstat's.
func TestMinUTestP(t *testing.T) {
	thr := benchmath.DefaultThresholds
	for n1 := 1; n1 <= 9; n1++ {
		for n2 := 1; n2 <= 9; n2++ {
			lo, hi := make([]float64, n1), make([]float64, n2)
			for i := range lo {
				lo[i] = float64(i)
			}
			for i := range hi {
				hi[i] = float64(100 + i)
			}
			cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(lo, &thr), benchmath.NewSample(hi, &thr))
			assert.InDelta(t, cmp.P, MinUTestP(n1, n2), 1e-12, "n1=%d n2=%d", n1, n2)
		}
	}
	// benchmath's own table of the minimum for equal sizes.
	for n, want := range map[int]float64{2: 0.3333333333333333, 3: 0.1, 4: 0.02857142857142857, 5: 0.007936507936507936, 9: 4.113533525298231e-05} {
		assert.InDelta(t, want, MinUTestP(n, n), 1e-15, "n=%d", n)
	}
	assert.Equal(t, 4, RunsNeeded(0.05))
	assert.Equal(t, 5, RunsNeeded(0.0125))
	assert.Equal(t, 1.0, MinUTestP(0, 5))
}

func TestHolm(t *testing.T) {
	tests := []struct {
		ps, want []float64
	}{
		{nil, []float64{}},
		{[]float64{0.02}, []float64{0.02}},
		{[]float64{0.01, 0.04, 0.03, 0.005}, []float64{0.03, 0.06, 0.06, 0.02}},
		{[]float64{0.5, 0.4}, []float64{0.8, 0.8}},
		{[]float64{0.9, 0.001}, []float64{0.9, 0.002}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.ps), func(t *testing.T) {
			got := Holm(tt.ps)
			assert.Len(t, got, len(tt.want))
			for i := range tt.want {
				assert.InDelta(t, tt.want[i], got[i], 1e-12, "index %d", i)
			}
		})
	}
}

func TestSignTestP(t *testing.T) {
	for _, tt := range []struct {
		up, down int
		want     float64
	}{
		{0, 0, 1}, {0, 5, 1}, {1, 0, 0.5}, {10, 0, math.Pow(2, -10)}, {3, 1, 5.0 / 16}, {2, 2, 11.0 / 16},
	} {
		require.InDelta(t, tt.want, SignTestP(tt.up, tt.down), 1e-12, "%d up, %d down", tt.up, tt.down)
	}
}

func TestNormal(t *testing.T) {
	for _, tt := range []struct{ p, z float64 }{
		{0.5, 0}, {0.975, 1.959963984540054}, {0.01, -2.3263478740408408}, {0.95, 1.6448536269514722}, {1e-6, -4.753424308822899},
	} {
		assert.InDelta(t, tt.z, NormalQuantile(tt.p), 1e-9, "p %v", tt.p)
		assert.InDelta(t, tt.p, NormalCDF(tt.z), 1e-12*math.Max(1, 1/tt.p), "z %v", tt.z)
	}
	assert.True(t, math.IsInf(NormalQuantile(0), -1))
	assert.True(t, math.IsInf(NormalQuantile(1), 1))
}
