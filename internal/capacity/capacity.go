// Package capacity searches for the highest request rate at which a
// server still meets its SLOs: it brackets the rate by doubling, then
// bisects between the last rate that passed and the first that failed.
// Each step is one call of a Probe, which runs a full benchmark at a rate;
// the package knows nothing of how.
//
// The search assumes that a step passes at every rate below one that
// passed. Noise can break that near the edge; the search then reports the
// highest rate that passed below the lowest that failed, which is what a
// user can count on.
//
// Between those two rates the search also estimates where the SLOs' edge
// lies (Result.Crossing): each step carries its margin, how far inside its
// tightest bound it stayed, and the edge is where the straight line
// between the margins of the bracketing steps crosses zero. The highest
// passing rate moves in jumps of the bracket's width (a few percent); the
// crossing moves with the margins, so two searches of servers a few
// percent apart report figures a few percent apart.
//
// vLLM's serve_sla sweep also works on a margin, but steers by it: it
// fits a PCHIP curve through the margins of every rate run so far, runs
// the curve's zero next, and stops when the bracket is one integer rate
// wide. Here the margin only places the answer, once, between the two
// bracketing steps: a run near the edge of a noisy machine can break the
// margin's monotony, and a curve through every point then chases the
// noise, while bisection needs only the verdicts to be ordered; and a
// relative precision serves 2 req/s and 2,000 req/s alike.
package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// A Search describes one capacity search. MinRate, MaxRate and Precision
// must be positive; Budget 0 means no limit.
type Search struct {
	// MinRate is the first rate tried, requests/s.
	MinRate float64
	// MaxRate is the highest rate tried.
	MaxRate float64
	// Precision ends the bisection when fail − pass ≤ Precision · pass.
	Precision float64
	// Budget bounds the search: a step is not started when the time spent
	// plus the last step's duration would pass it (the first step always
	// runs).
	Budget time.Duration
	// Confirm runs the step that ends the bracketing (the first failure)
	// once more before believing it: a spurious failure there (a stall
	// of a busy machine) would cap the search at half the true rate,
	// while one during the bisection costs at most the bracket's width.
	// When the rerun passes, the rate counts as passed and the doubling
	// goes on.
	Confirm bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// A Step is one probe of the search.
type Step struct {
	// Rate is the request rate asked for, requests/s.
	Rate float64
	// Pass reports whether every SLO held.
	Pass bool
	// Goodput is the step's request_goodput (req/s); NaN without goodput
	// SLOs.
	Goodput float64
	// P99TTFT is the step's p99 time to first token, ms (NaN when not
	// computed).
	P99TTFT float64
	// Margin is how far inside its bounds the step stayed: the smallest
	// relative margin of any bound (scenario.Verdict.Margin), negative
	// when one failed; NaN when it cannot be told (a bound without a
	// scale failed). The zero value says "just at the edge".
	Margin float64
	// Failed names the bounds that did not hold.
	Failed []string
	// Duration is how long the step took, warm-ups included.
	Duration time.Duration
}

// A Probe runs one step at rate. An error ends the search.
type Probe func(ctx context.Context, rate float64) (Step, error)

// Why a search ended before its bracket was within Precision.
const (
	StoppedMinRateFailed = "min_rate failed"
	StoppedMaxRatePassed = "max_rate passed"
	StoppedBudget        = "time budget spent"
	StoppedCanceled      = "canceled"
)

// A Result is what a search found.
type Result struct {
	// MaxRate is the highest rate that passed, requests/s; 0 when none did.
	MaxRate float64
	// MinFailRate is the lowest rate that failed; +Inf when none did.
	MinFailRate float64
	// Crossing is the estimated edge of the SLOs, requests/s: the rate at
	// which the margin, interpolated linearly between the step at MaxRate
	// and the step at MinFailRate, crosses zero. It lies between the two;
	// it is MaxRate when no step failed or a margin is not finite.
	Crossing float64
	// Converged reports whether MinFailRate − MaxRate ≤ Precision ·
	// MaxRate.
	Converged bool
	// Stopped says why the search ended without converging ("" when it
	// converged).
	Stopped string
	// Steps are the probes in the order run.
	Steps []Step
	// Elapsed is the search's duration.
	Elapsed time.Duration
}

func (s Search) check() error {
	var errs []error
	if !(s.MinRate > 0) || math.IsInf(s.MinRate, 0) {
		errs = append(errs, fmt.Errorf("min rate must be positive and finite, got %v", s.MinRate))
	}
	if !(s.MaxRate >= s.MinRate) || math.IsInf(s.MaxRate, 0) {
		errs = append(errs, fmt.Errorf("max rate must be finite and at least the min rate %v, got %v", s.MinRate, s.MaxRate))
	}
	if !(s.Precision > 0 && s.Precision < 1) {
		errs = append(errs, fmt.Errorf("precision must be in (0, 1), got %v", s.Precision))
	}
	if s.Budget < 0 {
		errs = append(errs, fmt.Errorf("budget must not be negative, got %s", s.Budget))
	}
	return errors.Join(errs...)
}

// Run searches with probe. It returns an error for a bad Search or when a
// probe fails; a search cut short by its budget or ctx returns its result
// so far with Stopped set.
func (s Search) Run(ctx context.Context, probe Probe) (*Result, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("capacity search: %w", err)
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	res := &Result{MinFailRate: math.Inf(1)}
	defer func() {
		res.Elapsed = now().Sub(start)
		res.Crossing = res.crossing()
	}()
	// step probes rate unless the budget or ctx says stop; ok is false
	// when the search must end.
	step := func(rate float64) (bool, error) {
		if ctx.Err() != nil {
			res.Stopped = StoppedCanceled
			return false, nil
		}
		if n := len(res.Steps); n > 0 && s.Budget > 0 && now().Sub(start)+res.Steps[n-1].Duration > s.Budget {
			res.Stopped = StoppedBudget
			return false, nil
		}
		st, err := probe(ctx, rate)
		if err != nil {
			return false, fmt.Errorf("capacity search at %v req/s: %w", rate, err)
		}
		st.Rate = rate
		res.Steps = append(res.Steps, st)
		return true, nil
	}
	// record counts a rate's verdict.
	record := func(rate float64, pass bool) {
		if pass {
			res.MaxRate = math.Max(res.MaxRate, rate)
		} else {
			res.MinFailRate = math.Min(res.MinFailRate, rate)
		}
	}
	last := func() bool { return res.Steps[len(res.Steps)-1].Pass }
	// Bracket: double from MinRate until a step fails or MaxRate passes.
	for rate := s.MinRate; ; rate = math.Min(2*rate, s.MaxRate) {
		ok, err := step(rate)
		if err != nil || !ok {
			return res, err
		}
		if !last() && s.Confirm {
			if ok, err = step(rate); err != nil || !ok {
				return res, err
			}
		}
		record(rate, last())
		if !last() {
			break
		}
		if rate >= s.MaxRate {
			res.Stopped = StoppedMaxRatePassed
			return res, nil
		}
	}
	if res.MaxRate == 0 {
		res.Stopped = StoppedMinRateFailed
		return res, nil
	}
	// Bisect between the highest pass and the lowest fail.
	for res.MinFailRate-res.MaxRate > s.Precision*res.MaxRate {
		rate := (res.MaxRate + res.MinFailRate) / 2
		ok, err := step(rate)
		if err != nil || !ok {
			return res, err
		}
		record(rate, last())
	}
	res.Converged = true
	return res, nil
}

// crossing interpolates the SLOs' edge between the last step at MaxRate
// that passed and the last at MinFailRate that failed.
func (r *Result) crossing() float64 {
	if r.MaxRate == 0 || math.IsInf(r.MinFailRate, 1) {
		return r.MaxRate
	}
	mp, mf := math.NaN(), math.NaN()
	for _, st := range r.Steps {
		switch {
		case st.Pass && st.Rate == r.MaxRate:
			mp = st.Margin
		case !st.Pass && st.Rate == r.MinFailRate:
			mf = st.Margin
		}
	}
	if !(mp >= 0 && mf <= 0 && mp-mf > 0) || math.IsInf(mp, 0) || math.IsInf(mf, 0) {
		return r.MaxRate
	}
	return r.MaxRate + (r.MinFailRate-r.MaxRate)*mp/(mp-mf)
}
