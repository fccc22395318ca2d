package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQuantileCounted: the counted quantile equals, to the bit,
// QuantileSorted of the multiset it stands for, on random multisets.
func TestQuantileCounted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(300)
		sorted := make([]float64, n)
		for i := range sorted {
			sorted[i] = rng.ExpFloat64()
		}
		slices.Sort(sorted)
		count := make([]int, n)
		var drawn []float64
		for range n {
			r := rng.IntN(n)
			count[r]++
			drawn = append(drawn, sorted[r])
		}
		slices.Sort(drawn)
		for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
			require.Equal(t, QuantileSorted(drawn, q), QuantileCounted(sorted, count, n, q), "n %d q %v", n, q)
		}
	}
	require.True(t, math.IsNaN(QuantileCounted(nil, nil, 0, 0.5)))
}
