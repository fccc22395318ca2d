package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSignedRankKnown checks SignedRank against published values.
func TestSignedRankKnown(t *testing.T) {
	// Hollander & Wolfe's depression data, the example of R's
	// ?wilcox.test: wilcox.test(x, y, paired = TRUE, alternative =
	// "greater") gives V = 40, p-value = 0.01953; two-sided 0.03906.
	x := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	y := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	v, n, p := SignedRank(d)
	assert.Equal(t, 40.0, v)
	assert.Equal(t, 9, n)
	assert.InDelta(t, 0.03906, p, 5e-6)

	// Tables of the signed-rank distribution (e.g. Siegel, Table G):
	// n = 10, P(T <= 8) = 0.0244, P(T <= 10) = 0.0420.
	assert.InDelta(t, 2*0.0244, signedRankExactP(8, 10), 2e-4)
	assert.InDelta(t, 2*25.0/1024, signedRankExactP(8, 10), 1e-12)
	assert.InDelta(t, 2*0.0420, signedRankExactP(10, 10), 2e-4)
	// n = 6: the smallest V gives 2/64; the middle of the distribution 1.
	assert.InDelta(t, 0.03125, signedRankExactP(0, 6), 1e-12)
	assert.InDelta(t, 0.03125, signedRankExactP(21, 6), 1e-12)
	assert.Equal(t, 1.0, signedRankExactP(10.5, 6))

	// Ties: the normal approximation with R's corrections. d = 1, 2, 2,
	// 3, 3, 3, -1: V = 26.5, var = 7*8*15/24 - (6+6+24)/48 = 34.25,
	// z = (26.5 - 14 - 0.5)/sqrt(34.25), p = 2(1 - Phi(z)) = 0.04031.
	v, n, p = SignedRank([]float64{1, 2, 2, 3, 3, 3, -1})
	assert.Equal(t, 26.5, v)
	assert.Equal(t, 7, n)
	assert.InDelta(t, 0.04031, p, 5e-5)

	// Zeros are dropped; nothing left is no evidence.
	v, n, p = SignedRank([]float64{0, 0, 0})
	assert.Equal(t, []any{0.0, 0, 1.0}, []any{v, n, p})
	_, n, _ = SignedRank([]float64{0, 1, -2, 0})
	assert.Equal(t, 2, n)

	// Infinite log ratios (a zero base) rank above the finite ones.
	v, _, p = SignedRank([]float64{math.Inf(1), 0.1, 0.2, 0.3, 0.4, 0.5})
	assert.Equal(t, 21.0, v)
	assert.InDelta(t, 0.03125, p, 1e-12)
}

// TestSignedRankExactMatchesNormal checks the exact distribution against
// the normal approximation where both apply: at n = 40 they agree to
// within 0.01 over random samples.
func TestSignedRankExactMatchesNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		d := make([]float64, 40)
		for i := range d {
			d[i] = rng.NormFloat64() + 0.2
		}
		v, n, exact := SignedRank(d)
		nf := float64(n)
		z := (v - nf*(nf+1)/4)
		z = (z - math.Copysign(0.5, z)) / math.Sqrt(nf*(nf+1)*(2*nf+1)/24)
		approx := 2 * math.Min(NormalCDF(z), NormalCDF(-z))
		assert.InDelta(t, approx, exact, 0.01, "V = %v", v)
	}
}

func TestMinSignedRankP(t *testing.T) {
	assert.Equal(t, 6, PairsNeeded(0.05))
	assert.Equal(t, 0.0625, MinSignedRankP(5))
	assert.Equal(t, 9, PairsNeeded(0.05/10)) // 2/2^9 = 0.0039
}
