package gate

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/stats"
)

// est builds pair estimates with one standard error.
func est(se float64, ds ...float64) []PairEstimate {
	out := make([]PairEstimate, len(ds))
	for i, d := range ds {
		out[i] = PairEstimate{D: d, SE: se, Requests: 200, Block: 15}
	}
	return out
}

func TestSequentialDecide(t *testing.T) {
	s := DefaultSequential()
	up5 := math.Log(1.05)
	tests := []struct {
		name   string
		est    []PairEstimate
		better int
		want   Decision
		why    string
	}{
		{"too few pairs", est(0.01, up5, up5), -1, Continue, "of at least 3"},
		{"clear regression", est(0.01, 0.1, 0.1, 0.1), -1, Regression, "regression: +10.52%"},
		{"clean", est(0.01, 0, 0.001, -0.001), -1, NoRegression, "no regression"},
		{"improvement passes", est(0.01, -0.1, -0.1, -0.1), -1, NoRegression, "no regression"},
		{"noisy continues", est(0.05, 0.02, 0.03, 0.02), -1, Continue, "neither a regression"},
		// The last look decides: a change short of significance passes,
		// and says what the pairs rule out.
		{"the cap passes", est(0.042, 0.025, 0.025, 0.025, 0.025, 0.025, 0.025, 0.025, 0.025), -1, NoRegression, "no regression ≥ 5.00% shown: +2.53% (±1.5%) over 8 pairs (the cap); this run rules out slowdowns above 5.1% (95%)"},
		{"too noisy at the cap", est(0.08, 0.02, 0.03, 0.02, 0.02, 0.03, 0.02, 0.02, 0.03), -1, Undecided, "more than twice the tolerance of +5.00%. Remedies: more requests per run, a quieter runner, or a larger tolerance"},
		// goodput: higher is better, so a drop is the regression.
		{"higher is better: a drop fails", est(0.01, -0.1, -0.1, -0.1), 1, Regression, "regression"},
		{"higher is better: a rise passes", est(0.01, 0.1, 0.1, 0.1), 1, NoRegression, "rules out drops above"},
		// The spread between pairs guards what the bootstrap cannot see:
		// tiny standard errors, but pairs that disagree.
		{"spread between pairs keeps it open", est(0.001, 0.15, -0.1, 0.05), -1, Continue, "neither a regression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := s.Decide(tt.est, 0.05, tt.better)
			require.NoError(t, err)
			require.Equal(t, tt.want, l.Decision, l.Why)
			require.Contains(t, l.Why, tt.why)
			require.Equal(t, len(tt.est), l.Pairs)
		})
	}
}

// TestSequentialStudentSpread: the same three pairs, whose spread is
// their only evidence of noise, decide without StudentSpread and stay
// open with it (the spread of 3 pairs counted at t with 2 df).
func TestSequentialStudentSpread(t *testing.T) {
	s := DefaultSequential()
	require.True(t, s.StudentSpread)
	s.StudentSpread = false
	pairs := est(0.001, 0.04, 0.08, 0.12)
	l, err := s.Decide(pairs, 0.05, -1)
	require.NoError(t, err)
	require.Equal(t, Regression, l.Decision, l.Why)
	s.StudentSpread = true
	l, err = s.Decide(pairs, 0.05, -1)
	require.NoError(t, err)
	require.Equal(t, Continue, l.Decision, l.Why)
}

func TestSequentialDecideErrors(t *testing.T) {
	s := DefaultSequential()
	tests := []struct {
		name   string
		s      Sequential
		est    []PairEstimate
		tol    float64
		better int
		want   string
	}{
		{"no pairs", s, nil, 0.05, -1, "no pairs"},
		{"absolute tolerance", s, est(0.01, 0, 0, 0), 0, -1, "needs a relative tolerance"},
		{"no direction", s, est(0.01, 0, 0, 0), 0.05, 0, "no direction"},
		{"past the cap", s, est(0.01, 0, 0, 0, 0, 0, 0, 0, 0, 0), 0.05, -1, "more than the cap"},
		{"nan", s, est(0.01, 0, math.NaN(), 0), 0.05, -1, "pair 2"},
		{"bad alpha", Sequential{Alpha: 0.6, Beta: 0.05, MinPairs: 1, MaxPairs: 2}, est(0.01, 0), 0.05, -1, "alpha"},
		{"bad pairs", Sequential{Alpha: 0.01, Beta: 0.05, MinPairs: 3, MaxPairs: 2}, est(0.01, 0), 0.05, -1, "(one look per pair): looks 3..2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.s.Decide(tt.est, tt.tol, tt.better)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestBootstrapPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := lowNoise
	pairs := m.run(rng, 0.10)
	e, err := BootstrapPair(pairs, 0.99, 0, 0, rng)
	require.NoError(t, err)
	require.Equal(t, m.Requests, e.Requests)
	require.GreaterOrEqual(t, e.Block, 15) // sqrt(200), rounded up
	require.InDelta(t, math.Log(1.10), e.D, 0.1)
	require.Greater(t, e.SE, 0.0)
	require.Less(t, e.SE, 0.1)

	// The order of the input does not matter: it is sorted by time.
	rev := append([]RequestPair(nil), pairs...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	e2, err := BootstrapPair(rev, 0.99, 0, 0, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	require.Equal(t, e.D, e2.D)
	require.Equal(t, e.Block, e2.Block)

	// A nil generator is a constantly seeded one: the same verdict twice.
	a, err := BootstrapPair(pairs, 0.99, 50, 0, nil)
	require.NoError(t, err)
	b, err := BootstrapPair(pairs, 0.99, 50, 0, nil)
	require.NoError(t, err)
	require.Equal(t, a, b)

	// Identical sides: no change and no noise.
	same := make([]RequestPair, 100)
	for i := range same {
		same[i] = RequestPair{Start: float64(i), Base: float64(1 + i%7), Head: float64(1 + i%7)}
	}
	e, err = BootstrapPair(same, 0.99, 50, 0, rng)
	require.NoError(t, err)
	require.Equal(t, 0.0, e.D)
	require.Equal(t, 0.0, e.SE)
}

func TestBootstrapPairBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	good := lowNoise.run(rng, 0)
	tests := []struct {
		name  string
		pairs func() []RequestPair
		q     float64
		want  string
	}{
		{"too few", func() []RequestPair { return good[:49] }, 0.99, "49 request pairs, want at least 50"},
		{"zero ttft", func() []RequestPair {
			p := append([]RequestPair(nil), good...)
			p[7].Head = 0
			return p
		}, 0.99, "request 7"},
		{"nan start", func() []RequestPair {
			p := append([]RequestPair(nil), good...)
			p[3].Start = math.NaN()
			return p
		}, 0.99, "request 3"},
		{"bad quantile", func() []RequestPair { return good }, 1.5, "quantile 1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BootstrapPair(tt.pairs(), tt.q, 10, 0, rng)
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), tt.want), err.Error())
		})
	}
}

// TestSequentialRun drives the design through Run: a clear regression
// stops early, a source that fails is an error naming the pair, and
// noise too high to decide ends undecided at the cap.
func TestSequentialRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	s := DefaultSequential()
	l, est, err := s.Run(func(int) ([]RequestPair, error) { return lowNoise.run(rng, 0.25), nil }, 0.99, 0.05, -1, 100, rng)
	require.NoError(t, err)
	require.Equal(t, Regression, l.Decision, l.Why)
	require.Equal(t, s.MinPairs, len(est))

	_, _, err = s.Run(func(k int) ([]RequestPair, error) {
		if k == 2 {
			return nil, errors.New("invalid run")
		}
		return lowNoise.run(rng, 0), nil
	}, 0.99, 0.05, -1, 100, rng)
	require.ErrorContains(t, err, "pair 2: invalid run")

	noisy := highNoise
	noisy.Jitter, noisy.Run = 0.3, 0.1
	s.MaxPairs = 4
	l, est, err = s.Run(func(int) ([]RequestPair, error) { return noisy.run(rng, 0.03), nil }, 0.99, 0.05, -1, 100, rng)
	require.NoError(t, err)
	require.Equal(t, Undecided, l.Decision, l.Why)
	require.Len(t, est, 4)
}

// TestSmallSampleInflation checks the factor against printed tables:
// (t_{2,0.99} / z_{0.99})^2 = (6.965 / 2.326)^2 = 8.96.
func TestSmallSampleInflation(t *testing.T) {
	require.InDelta(t, -2.326, stats.NormalQuantile(0.01), 1e-3)
	require.InDelta(t, 8.96, smallSampleInflation(2, 0.01), 0.02)
}

// TestBootstrapPairMedian checks the median's paired estimate: the
// median of the per-request log ratios, not the ratio of the medians.
func TestBootstrapPairMedian(t *testing.T) {
	// 51 requests valued 1..51 on base; head is 10% slower on the first
	// 30 and 10% faster on the other 21. The typical request is 10%
	// slower: 30 of 51 ratios are 1.1. The ratio of the two medians is
	// +7.3%: base's is 26, head's 27.9 (31 × 0.9, the 26th of head's
	// values).
	pairs := make([]RequestPair, 51)
	for i := range pairs {
		v := float64(i + 1)
		r := 1.1
		if i >= 30 {
			r = 0.9
		}
		pairs[i] = RequestPair{Start: float64(i), Base: v, Head: v * r}
	}
	e, err := BootstrapPair(pairs, 0.5, 0, 0, nil)
	require.NoError(t, err)
	require.InDelta(t, math.Log(1.1), e.D, 1e-12)

	// Every request 5% slower: the estimate is exactly 5%, with no
	// spread, whatever the values are.
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range pairs {
		v := math.Exp(rng.NormFloat64())
		pairs[i] = RequestPair{Start: float64(i), Base: v, Head: v * 1.05}
	}
	e, err = BootstrapPair(pairs, 0.5, 0, 0, nil)
	require.NoError(t, err)
	require.InDelta(t, math.Log(1.05), e.D, 1e-12)
	require.InDelta(t, 0, e.SE, 1e-6)

	// Same values, but head's are base's in another order: the two
	// medians are equal (a ratio of medians says no change), while no
	// request kept its value. The paired median sees the per-request
	// ratios, whose spread the bootstrap reports.
	perm := rng.Perm(len(pairs))
	shuffled := make([]RequestPair, len(pairs))
	for i, p := range pairs {
		shuffled[i] = RequestPair{Start: p.Start, Base: p.Base, Head: pairs[perm[i]].Base}
	}
	e, err = BootstrapPair(shuffled, 0.5, 0, 0, nil)
	require.NoError(t, err)
	require.Greater(t, e.SE, 0.05)
}
