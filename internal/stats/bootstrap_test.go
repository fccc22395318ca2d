package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// matched draws n requests at 5 req/s whose log value is a shared
// per-request term (sd 0.3) plus each side's own noise (sd own); head
// is raised by change.
func matched(rng *rand.Rand, n int, own, change float64) []Matched {
	out := make([]Matched, n)
	for i := range out {
		shared := 0.3 * rng.NormFloat64()
		out[i] = Matched{
			At:   float64(i) / 5,
			Base: 0.1 * math.Exp(shared+own*rng.NormFloat64()),
			Head: 0.1 * (1 + change) * math.Exp(shared+own*rng.NormFloat64()),
		}
	}
	return out
}

// TestCountedQuantile checks the bootstrap's O(n) quantile against
// QuantileSorted on random multisets.
func TestCountedQuantile(t *testing.T) {
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
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
			require.Equal(t, Quantile(drawn, q), countedQuantile(sorted, count, n, q), "n %d q %v", n, q)
		}
	}
}

func TestQuantileRatio(t *testing.T) {
	m := matched(rand.New(rand.NewPCG(3, 4)), 400, 0.05, 0.10)
	var b Bootstrap
	e, err := b.QuantileRatio(m, 0.5)
	require.NoError(t, err)
	base, head := make([]float64, len(m)), make([]float64, len(m))
	for i, r := range m {
		base[i], head[i] = r.Base, r.Head
	}
	require.Equal(t, math.Log(Quantile(head, 0.5)/Quantile(base, 0.5)), e.D)
	require.Equal(t, 400, e.N)
	require.GreaterOrEqual(t, e.Block, 20) // √400
	require.InDelta(t, math.Log(1.10), e.D, 0.02)
	require.Greater(t, e.SE, 0.0)
	require.Less(t, e.SE, 0.02)

	// The order of the input does not matter: it is sorted by time.
	rev := slices.Clone(m)
	slices.Reverse(rev)
	e2, err := b.QuantileRatio(rev, 0.5)
	require.NoError(t, err)
	require.Equal(t, e, e2)
}

// TestQuantileRatioCalibrated compares the bootstrap's standard error
// with the true spread of D over 300 independent pairs. The draws are
// seeded, so the test is deterministic. It fails when the standard
// error is off by a quarter: a bootstrap that ignored the blocks or
// the pairing would be.
func TestQuantileRatioCalibrated(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, q := range []float64{0.5, 0.99} {
		var ds, ses []float64
		for range 300 {
			e, err := Bootstrap{Reps: 200, Rand: rng}.QuantileRatio(matched(rng, 400, 0.05, 0), q)
			require.NoError(t, err)
			ds, ses = append(ds, e.D), append(ses, e.SE)
		}
		ratio := meanSD(ses) / sd(ds)
		t.Logf("q %v: mean SE / sd(D) = %.3f", q, ratio)
		require.InDelta(t, 1, ratio, 0.25, "q %v", q)
	}
}

func meanSD(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func sd(x []float64) float64 {
	m, ss := meanSD(x), 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

func TestQuantileRatioBadInput(t *testing.T) {
	var b Bootstrap
	m := matched(rand.New(rand.NewPCG(1, 1)), 100, 0.05, 0)
	_, err := b.QuantileRatio(m, 0.99)
	var few *TooFewError
	require.ErrorAs(t, err, &few)
	require.Equal(t, 200, few.Need)
	_, err = b.QuantileRatio(m, 1.5)
	require.ErrorContains(t, err, "quantile 1.5")
	bad := slices.Clone(m)
	bad[3].Head = 0
	_, err = b.QuantileRatio(bad, 0.5)
	require.ErrorContains(t, err, "request 3")
	require.Equal(t, 20, MinQuantileRequests(0.5))
	require.Equal(t, 20, MinQuantileRequests(0.9))
	require.Equal(t, 200, MinQuantileRequests(0.99))
	require.Equal(t, 2000, MinQuantileRequests(0.999))
}

func TestCountRatio(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := make([]Matched, 300)
	base, head := 0.0, 0.0
	for i := range m {
		m[i].At = float64(i)
		if rng.Float64() < 0.7 {
			m[i].Base = 1
			base++
		}
		if rng.Float64() < 0.6 {
			m[i].Head = 1
			head++
		}
	}
	var b Bootstrap
	e, err := b.CountRatio(m, math.Log(1.1))
	require.NoError(t, err)
	require.InDelta(t, math.Log(head/base)+math.Log(1.1), e.D, 1e-12)
	// Independent 0/1 weights: the log ratio of two counts of about 200
	// and 180 has a standard error of about sqrt(0.3/210 + 0.4/180).
	require.InDelta(t, math.Sqrt(0.3/210+0.4/180), e.SE, 0.015)

	for i := range m {
		m[i].Head = 0
	}
	_, err = b.CountRatio(m, 0)
	require.True(t, errors.Is(err, ErrNoHeadCount))
}

func TestBlockLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	iid := make([]float64, 400)
	for i := range iid {
		iid[i] = rng.NormFloat64()
	}
	require.Equal(t, 20, BlockLength(iid)) // √400: no correlation to speak of
	// AR(1) with correlation 0.95: the correlation lasts about 60 lags.
	ar := make([]float64, 400)
	for i := 1; i < len(ar); i++ {
		ar[i] = 0.95*ar[i-1] + rng.NormFloat64()
	}
	require.Greater(t, BlockLength(ar), 40)
	require.LessOrEqual(t, BlockLength(ar), 100)
	require.Equal(t, 1, BlockLength(nil))
}
