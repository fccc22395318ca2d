package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSequentialValidate(t *testing.T) {
	good := Sequential{Alpha: 0.01, Beta: 0.05, MinLooks: 2, MaxLooks: 8}
	require.NoError(t, good.Validate())
	for _, s := range []Sequential{
		{Alpha: 0, Beta: 0.05, MinLooks: 2, MaxLooks: 8},
		{Alpha: 0.01, Beta: 0.5, MinLooks: 2, MaxLooks: 8},
		{Alpha: 0.01, Beta: 0.05, MinLooks: 0, MaxLooks: 8},
		{Alpha: 0.01, Beta: 0.05, MinLooks: 3, MaxLooks: 2},
	} {
		require.Error(t, s.Validate(), "%+v", s)
	}
	_, err := good.Look(9, 0, 0.01, 0.05)
	require.Error(t, err)
	_, err = good.Look(2, math.NaN(), 0.01, 0.05)
	require.Error(t, err)
	_, err = good.Look(2, 0, 0.01, 0)
	require.Error(t, err)
}

// TestSequentialLastLookDecides checks that the last look never asks
// for another pair, and that it fails only a significant change.
func TestSequentialLastLookDecides(t *testing.T) {
	s := Sequential{Alpha: 0.01, Beta: 0.05, MinLooks: 2, MaxLooks: 6}
	for _, d := range []float64{-0.1, 0, 0.02, 0.049, 0.06, 0.2} {
		l, err := s.Look(6, d, 0.02, 0.049)
		require.NoError(t, err)
		require.True(t, l.Last)
		require.NotEqual(t, Continue, l.Decision, "d %v", d)
		require.Equal(t, d >= l.FailZ*0.02, l.Decision == Fail, "d %v", d)
		require.InDelta(t, d+z95*0.02, l.Upper, 1e-12)
	}
	l, err := s.Look(1, 0.3, 0.01, 0.049)
	require.NoError(t, err)
	require.Equal(t, Continue, l.Decision, "before MinLooks nothing decides")
}

// TestSequentialErrorRates runs the design on exact normal looks. The
// union bound gives a false fail rate <= Alpha = 0.01 and a catch rate
// of a change of 2·Delta well above 95% at a standard error that makes
// Delta detectable at the last look. Over 20000 trials the standard
// error of a rate near 0.01 is 0.0007, so the bound 0.015 is 7 standard
// errors away: the test fails by chance with probability < 1e-9.
func TestSequentialErrorRates(t *testing.T) {
	s := Sequential{Alpha: 0.01, Beta: 0.05, MinLooks: 2, MaxLooks: 8}
	const delta, trials = 0.049, 20000
	// The per-pair standard error sigma gives the pooled one sigma/sqrt(k).
	last, err := s.Look(s.MaxLooks, 0, 1, delta)
	require.NoError(t, err)
	sigma := delta / (last.FailZ + z95) * math.Sqrt(float64(s.MaxLooks))
	rng := rand.New(rand.NewPCG(5, 6))
	rate := func(mu float64) float64 {
		fails := 0
		for range trials {
			sum := 0.0
			for k := 1; k <= s.MaxLooks; k++ {
				sum += mu + sigma*rng.NormFloat64()
				se := sigma / math.Sqrt(float64(k))
				l, err := s.Look(k, sum/float64(k), se, delta)
				require.NoError(t, err)
				if l.Decision == Fail {
					fails++
				}
				if l.Decision != Continue {
					break
				}
			}
		}
		return float64(fails) / trials
	}
	require.Less(t, rate(0), 0.015, "A/A false fail")
	require.Greater(t, rate(2*delta), 0.99, "2·delta caught")
	require.Greater(t, rate(delta), 0.90, "delta caught")
}
