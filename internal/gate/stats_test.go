package gate

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/perf/benchmath"

	"github.com/servegate/servegate/internal/stats"
)

// TestMinUTestP checks the smallest attainable p-value against the U test
// benchmath itself runs on completely separated samples, so the "too few
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
			assert.InDelta(t, cmp.P, stats.MinUTestP(n1, n2), 1e-12, "n1=%d n2=%d", n1, n2)
		}
	}
	// benchmath's own table of the minimum for equal sizes.
	for n, want := range map[int]float64{2: 0.3333333333333333, 3: 0.1, 4: 0.02857142857142857, 5: 0.007936507936507936, 9: 4.113533525298231e-05} {
		assert.InDelta(t, want, stats.MinUTestP(n, n), 1e-15, "n=%d", n)
	}
	assert.Equal(t, 4, stats.RunsNeeded(0.05))
	assert.Equal(t, 5, stats.RunsNeeded(0.0125))
	assert.Equal(t, 1.0, stats.MinUTestP(0, 5))
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
			got := stats.Holm(tt.ps)
			assert.Len(t, got, len(tt.want))
			for i := range tt.want {
				assert.InDelta(t, tt.want[i], got[i], 1e-12, "index %d", i)
			}
		})
	}
}
