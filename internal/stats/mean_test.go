package stats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMeanStd(t *testing.T) {
	assert.Equal(t, 5.5, Mean([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}))
	assert.Equal(t, 2.0, Std([]float64{2, 4, 4, 4, 5, 5, 7, 9}))
	assert.True(t, math.IsNaN(Mean(nil)))
	assert.True(t, math.IsNaN(Std(nil)))
}

// TestMeanPairwise: 16 values are summed in numpy's eight accumulators,
// r[j] = x[j] + x[j+8]. So 1e16 and -1e16 cancel in r[0] and the ones
// survive: the sum is 14. A sum from left to right loses the ones added
// to 1e16 (its spacing is 2) and gives 7.
func TestMeanPairwise(t *testing.T) {
	xs := make([]float64, 16)
	for i := range xs {
		xs[i] = 1
	}
	xs[0], xs[8] = 1e16, -1e16
	assert.Equal(t, 14.0/16, Mean(xs))
}
