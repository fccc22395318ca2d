package capacity

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fake is a server that meets its SLOs up to limit req/s; each step takes
// cost on a fake clock.
type fake struct {
	limit float64
	cost  time.Duration
	now   time.Time
	rates []float64
}

func (f *fake) probe(_ context.Context, rate float64) (Step, error) {
	f.rates = append(f.rates, rate)
	f.now = f.now.Add(f.cost)
	return Step{Pass: rate <= f.limit, Duration: f.cost}, nil
}

func (f *fake) clock() time.Time { return f.now }

func TestSearchFindsTheLimit(t *testing.T) {
	for _, limit := range []float64{1, 3.3, 17, 40, 100, 999} {
		f := &fake{limit: limit, cost: time.Second}
		s := Search{MinRate: 1, MaxRate: 1024, Precision: 0.05, Now: f.clock}
		res, err := s.Run(context.Background(), f.probe)
		require.NoError(t, err)
		require.True(t, res.Converged, "limit %v: %+v", limit, res)
		assert.LessOrEqual(t, res.MaxRate, limit)
		assert.Greater(t, res.MinFailRate, limit)
		assert.LessOrEqual(t, res.MinFailRate-res.MaxRate, 0.05*res.MaxRate)
		assert.Equal(t, len(f.rates), len(res.Steps))
		assert.Equal(t, time.Duration(len(f.rates))*time.Second, res.Elapsed)
	}
}

func TestSearchEnds(t *testing.T) {
	t.Run("min rate fails", func(t *testing.T) {
		f := &fake{limit: 0.5, cost: time.Second}
		res, err := Search{MinRate: 1, MaxRate: 8, Precision: 0.1, Now: f.clock}.Run(context.Background(), f.probe)
		require.NoError(t, err)
		assert.Equal(t, StoppedMinRateFailed, res.Stopped)
		assert.Zero(t, res.MaxRate)
		assert.Equal(t, []float64{1}, f.rates)
	})
	t.Run("max rate passes", func(t *testing.T) {
		f := &fake{limit: 100, cost: time.Second}
		res, err := Search{MinRate: 1, MaxRate: 6, Precision: 0.1, Now: f.clock}.Run(context.Background(), f.probe)
		require.NoError(t, err)
		assert.Equal(t, StoppedMaxRatePassed, res.Stopped)
		assert.Equal(t, 6.0, res.MaxRate)
		assert.Equal(t, []float64{1, 2, 4, 6}, f.rates)
		assert.True(t, math.IsInf(res.MinFailRate, 1))
	})
	t.Run("budget", func(t *testing.T) {
		f := &fake{limit: 37, cost: 10 * time.Second}
		res, err := Search{MinRate: 1, MaxRate: 1024, Precision: 0.01, Budget: 75 * time.Second, Now: f.clock}.Run(context.Background(), f.probe)
		require.NoError(t, err)
		assert.Equal(t, StoppedBudget, res.Stopped)
		assert.False(t, res.Converged)
		assert.Len(t, res.Steps, 7, "the 8th step would end past the budget")
		assert.LessOrEqual(t, res.MaxRate, 37.0)
		assert.Positive(t, res.MaxRate)
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := &fake{limit: 37, cost: time.Second}
		n := 0
		res, err := Search{MinRate: 1, MaxRate: 1024, Precision: 0.01, Now: f.clock}.Run(ctx, func(ctx context.Context, r float64) (Step, error) {
			if n++; n == 3 {
				cancel()
			}
			return f.probe(ctx, r)
		})
		require.NoError(t, err)
		assert.Equal(t, StoppedCanceled, res.Stopped)
		assert.Len(t, res.Steps, 3)
	})
	t.Run("probe error", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := Search{MinRate: 1, MaxRate: 8, Precision: 0.1}.Run(context.Background(), func(context.Context, float64) (Step, error) { return Step{}, boom })
		assert.ErrorIs(t, err, boom)
	})
}

// TestSearchConfirmsTheBracket: a spurious failure at the end of the
// bracketing is run again, and the doubling goes on when the rerun passes.
func TestSearchConfirmsTheBracket(t *testing.T) {
	f := &fake{limit: 40, cost: time.Second}
	spurious := true
	probe := func(ctx context.Context, r float64) (Step, error) {
		st, err := f.probe(ctx, r)
		if r == 16 && spurious {
			spurious, st.Pass = false, false // one stall of a busy machine
		}
		return st, err
	}
	res, err := Search{MinRate: 1, MaxRate: 1024, Precision: 0.05, Confirm: true, Now: f.clock}.Run(context.Background(), probe)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 4, 8, 16, 16, 32, 64, 64}, f.rates[:9], "16 failed, was run again, passed")
	assert.InDelta(t, 40, res.MaxRate, 0.05*40)
	assert.LessOrEqual(t, res.MaxRate, 40.0)

	f = &fake{limit: 40, cost: time.Second}
	spurious = true
	res, err = Search{MinRate: 1, MaxRate: 1024, Precision: 0.05, Now: f.clock}.Run(context.Background(), probe)
	require.NoError(t, err)
	assert.Less(t, res.MaxRate, 16.0, "without Confirm the stall caps the search")
}

func TestSearchRejectsBadInput(t *testing.T) {
	for _, s := range []Search{
		{MinRate: 0, MaxRate: 8, Precision: 0.1},
		{MinRate: 2, MaxRate: 1, Precision: 0.1},
		{MinRate: 1, MaxRate: math.Inf(1), Precision: 0.1},
		{MinRate: 1, MaxRate: 8, Precision: 0},
		{MinRate: 1, MaxRate: 8, Precision: 1},
		{MinRate: math.NaN(), MaxRate: 8, Precision: 0.1},
		{MinRate: 1, MaxRate: 8, Precision: 0.1, Budget: -1},
	} {
		_, err := s.Run(context.Background(), func(context.Context, float64) (Step, error) { return Step{Pass: true}, nil })
		assert.Error(t, err, "%+v", s)
	}
}

// marginal is a server whose margin falls linearly with the rate and
// crosses zero at limit.
type marginal struct{ limit, nanAbove float64 }

func (m marginal) probe(_ context.Context, rate float64) (Step, error) {
	st := Step{Pass: rate <= m.limit, Margin: (m.limit - rate) / m.limit, Duration: time.Second}
	if m.nanAbove > 0 && rate > m.nanAbove {
		st.Margin = math.NaN()
	}
	return st, nil
}

func TestSearchCrossing(t *testing.T) {
	s := Search{MinRate: 8, MaxRate: 128, Precision: 0.04}
	for _, limit := range []float64{17, 23.6, 25, 26.3} {
		res, err := s.Run(context.Background(), marginal{limit: limit}.probe)
		require.NoError(t, err)
		require.True(t, res.Converged)
		assert.InDelta(t, limit, res.Crossing, 1e-9, "a linear margin is interpolated exactly; the last pass is %v", res.MaxRate)
		assert.GreaterOrEqual(t, res.Crossing, res.MaxRate)
		assert.LessOrEqual(t, res.Crossing, res.MinFailRate)
	}
	t.Run("a margin that cannot be told", func(t *testing.T) {
		res, err := s.Run(context.Background(), marginal{limit: 25, nanAbove: 25}.probe)
		require.NoError(t, err)
		assert.Equal(t, res.MaxRate, res.Crossing)
	})
	t.Run("no failure", func(t *testing.T) {
		res, err := Search{MinRate: 1, MaxRate: 4, Precision: 0.1}.Run(context.Background(), marginal{limit: 100}.probe)
		require.NoError(t, err)
		assert.Equal(t, 4.0, res.Crossing)
	})
	t.Run("no pass", func(t *testing.T) {
		res, err := s.Run(context.Background(), marginal{limit: 1}.probe)
		require.NoError(t, err)
		assert.Zero(t, res.Crossing)
	})
}
