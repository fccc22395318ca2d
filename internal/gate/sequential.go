package gate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/servegate/servegate/internal/stats"
)

// A Sequential is the design of the fast paired verdict: pairs of runs
// (base and head at the same time, one schedule) arrive one at a time,
// and after each the test either decides or asks for another pair, up to
// MaxPairs.
//
// The test is Wald's sequential probability ratio test (SPRT) of "no
// change" (the log ratio of the figure is 0) against "a regression of
// exactly the tolerance" (log(1+tolerance) the bad way), on the normal
// approximation of the pooled estimate: after k pairs the mean log ratio
// D of the pairs has variance V, so the log likelihood ratio is
//
//	LLR = (δ/V) (D - δ/2),   δ = the tolerance as a log ratio,
//
// the score of a Brownian motion with drift δ observed at information
// 1/V. It stops for "regression" when LLR >= log((1-Beta)/Alpha) and for
// "no regression" when LLR <= log(Beta/(1-Alpha)). Wald's bounds keep
// the chance of failing a clean change near Alpha and of passing a
// regression of the tolerance near Beta; looking only after whole pairs
// overshoots the boundaries, which makes both rates smaller, not larger.
//
// Why an SPRT and not a group-sequential design with alpha spending: the
// gate needs to stop both ways (a clean A/A should cost as few pairs as a
// clear regression), the SPRT is the design with the fewest expected
// observations at both hypotheses, and its boundaries need no planned
// number of looks, so a run that needs fewer pairs simply stops. Why not
// an always-valid mixture test: it only stops to reject, never to accept
// "no regression". The price of the SPRT is that the tolerance becomes
// the regression the test is built to catch (with power 1-Beta) rather
// than a band the point estimate must leave: in this design a change of
// +5% under a 5% tolerance fails in about 1-Beta of trials, a change of
// half the tolerance about as often as it passes.
//
// V is the larger of two estimates, so that neither source of noise can
// be missed: the block-bootstrap variances of the pairs (the noise within
// a run, sum SE^2 / k^2) and, from 3 pairs on, the spread of the pairs'
// log ratios (var(D_i) / k; noise between runs that the bootstrap inside
// one run cannot see, such as one side's process starting on a slower
// core).
//
// The zero value is not usable; start from DefaultSequential.
type Sequential struct {
	// Alpha is the chance of failing a comparison with no change (the
	// A/A false-fail rate); Beta that of passing a regression of exactly
	// the tolerance. Both in (0, 0.5).
	Alpha, Beta float64
	// MinPairs is the fewest pairs before any decision (at least 1);
	// MaxPairs the cap: a comparison undecided after MaxPairs pairs is
	// an invalid run (exit 2), never a pass.
	MinPairs, MaxPairs int
	// StudentSpread counts the spread between pairs at Student's t
	// reach (smallSampleInflation) instead of as if it were exact. It
	// guards better against an offset of one side for a whole run, at
	// the cost of about two more pairs per verdict; measured in
	// docs/verdicts.md. (Counting the spread only when it exceeds the
	// bootstraps' variance, a pretest, was tried and made the offset's
	// false fails worse, 6%: the spread is then trusted exactly when it
	// happens to be small.)
	StudentSpread bool
}

// DefaultSequential is the fast path's design: false-fail at most 1%,
// a regression of the tolerance caught at least 95% of the time, a
// decision from 2 pairs on, at most 8 pairs.
func DefaultSequential() Sequential {
	return Sequential{Alpha: 0.01, Beta: 0.05, MinPairs: 3, MaxPairs: 8}
}

// Validate reports a design that cannot run.
func (s Sequential) Validate() error {
	var errs []error
	if !(s.Alpha > 0 && s.Alpha < 0.5) {
		errs = append(errs, fmt.Errorf("sequential: alpha %v: must be in (0, 0.5)", s.Alpha))
	}
	if !(s.Beta > 0 && s.Beta < 0.5) {
		errs = append(errs, fmt.Errorf("sequential: beta %v: must be in (0, 0.5)", s.Beta))
	}
	if s.MinPairs < 1 || s.MaxPairs < s.MinPairs || s.MaxPairs > 1000 {
		errs = append(errs, fmt.Errorf("sequential: pairs %d..%d: want 1 <= min <= max <= 1000", s.MinPairs, s.MaxPairs))
	}
	return errors.Join(errs...)
}

// A Decision is the state of a sequential comparison after a look.
type Decision int

const (
	// Continue asks for another pair.
	Continue Decision = iota
	// NoRegression: the evidence is against a regression of the
	// tolerance (exit 0 for this figure).
	NoRegression
	// Regression: the evidence is for one (exit 1).
	Regression
	// Undecided: the cap was reached with neither boundary crossed: an
	// invalid run (exit 2), never a pass.
	Undecided
)

// String names the decision as the summary writes it.
func (d Decision) String() string {
	switch d {
	case NoRegression:
		return "no regression"
	case Regression:
		return "regression"
	case Undecided:
		return "undecided at the cap"
	}
	return "continue"
}

// A Look is the sequential test's state after some pairs.
type Look struct {
	// Pairs is the number of pairs seen.
	Pairs int `json:"pairs"`
	// D is the mean log ratio head/base of the pairs, in the bad
	// direction's sign as measured (exp(D)-1 is the change); SE its
	// standard error (the square root of V).
	D  float64 `json:"d"`
	SE float64 `json:"se"`
	// LLR is the log likelihood ratio; Lower and Upper the boundaries.
	LLR   float64 `json:"llr"`
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	// Decision is what the look decided; Why says it in words.
	Decision Decision `json:"decision"`
	Why      string   `json:"why"`
}

// Decide runs the sequential test on the estimates of the pairs seen so
// far, in the order they ran. tolerance is the relative tolerance (0.05
// for 5%); better is +1 when higher values of the figure are better, -1
// when lower are. It returns an error for a design or input that cannot
// be judged (which the caller reports as exit 2).
func (s Sequential) Decide(est []PairEstimate, tolerance float64, better int) (Look, error) {
	if err := s.Validate(); err != nil {
		return Look{}, err
	}
	if !(tolerance > 0 && tolerance < 1) {
		return Look{}, fmt.Errorf("sequential: tolerance %v: the sequential test needs a relative tolerance in (0, 1): it is the regression the test is built to catch", tolerance)
	}
	if better != 1 && better != -1 {
		return Look{}, errors.New("sequential: the figure has no direction (better=lower or better=higher)")
	}
	k := len(est)
	if k == 0 {
		return Look{}, errors.New("sequential: no pairs")
	}
	if k > s.MaxPairs {
		return Look{}, fmt.Errorf("sequential: %d pairs, more than the cap of %d", k, s.MaxPairs)
	}
	// delta is the regression of exactly the tolerance as a log ratio in
	// the bad direction; bad turns a measured log ratio into that sign.
	bad := float64(-better)
	delta := math.Log(1 + tolerance)
	if better == 1 {
		delta = -math.Log(1 - tolerance)
	}
	var sumD, sumV float64
	for i, e := range est {
		if math.IsNaN(e.D) || math.IsInf(e.D, 0) || !(e.SE >= 0) || math.IsInf(e.SE, 0) {
			return Look{}, fmt.Errorf("sequential: pair %d: log ratio %v, standard error %v: want finite values", i+1, e.D, e.SE)
		}
		sumD += e.D
		sumV += e.SE * e.SE
	}
	kf := float64(k)
	mean := sumD / kf
	v := sumV / (kf * kf)
	if k >= 3 {
		var ss float64
		for _, e := range est {
			ss += (e.D - mean) * (e.D - mean)
		}
		emp := ss / (kf - 1) / kf
		if s.StudentSpread {
			emp *= smallSampleInflation(k-1, s.Alpha)
		}
		v = math.Max(v, emp)
	}
	l := Look{
		Pairs: k, D: mean, SE: math.Sqrt(v),
		Lower: math.Log(s.Beta / (1 - s.Alpha)),
		Upper: math.Log((1 - s.Beta) / s.Alpha),
	}
	x := bad * mean // the change in the bad direction
	if v == 0 {
		// No noise at all: the sign alone decides.
		l.LLR = math.Inf(1)
		if x < delta/2 {
			l.LLR = math.Inf(-1)
		}
	} else {
		l.LLR = delta / v * (x - delta/2)
	}
	change := pct(math.Exp(mean) - 1)
	target := pct(math.Exp(bad*delta) - 1) // the tolerance's regression
	switch {
	case k < s.MinPairs:
		l.Decision, l.Why = Continue, fmt.Sprintf("%d of at least %d pairs", k, s.MinPairs)
	case l.LLR >= l.Upper:
		l.Decision, l.Why = Regression, fmt.Sprintf("regression: %s (±%.1f%%) over %d pairs, log likelihood ratio %.2f >= %.2f against no change", change, 100*l.SE, k, l.LLR, l.Upper)
	case l.LLR <= l.Lower:
		l.Decision, l.Why = NoRegression, fmt.Sprintf("no regression: %s (±%.1f%%) over %d pairs, log likelihood ratio %.2f <= %.2f against a %s regression", change, 100*l.SE, k, l.LLR, l.Lower, target)
	case k == s.MaxPairs:
		l.Decision, l.Why = Undecided, fmt.Sprintf("undecided after %d pairs (the cap): %s (±%.1f%%), log likelihood ratio %.2f between %.2f and %.2f; the noise is too high to tell a %s regression from none: an invalid run, not a pass",
			k, change, 100*l.SE, l.LLR, l.Lower, l.Upper, target)
	default:
		l.Decision, l.Why = Continue, fmt.Sprintf("%s (±%.1f%%) after %d pairs, log likelihood ratio %.2f in (%.2f, %.2f)", change, 100*l.SE, k, l.LLR, l.Lower, l.Upper)
	}
	return l, nil
}

// Run drives the sequential test: it asks next for the request pairs of
// pair k (1, 2, ...), estimates the change of the q-quantile in each with
// BootstrapPair (reps replicates; 0 means BootstrapReps), and stops at
// the first look that decides, or at the cap (Undecided). It returns the
// last look and every pair's estimate. An error from next or from a
// pair's bootstrap stops it; the caller reports it as exit 2.
func (s Sequential) Run(next func(k int) ([]RequestPair, error), q float64, tolerance float64, better, reps int, rng *rand.Rand) (Look, []PairEstimate, error) {
	if err := s.Validate(); err != nil {
		return Look{}, nil, err
	}
	var est []PairEstimate
	for k := 1; k <= s.MaxPairs; k++ {
		pairs, err := next(k)
		if err != nil {
			return Look{}, est, fmt.Errorf("sequential: pair %d: %w", k, err)
		}
		e, err := BootstrapPair(pairs, q, reps, 0, rng)
		if err != nil {
			return Look{}, est, fmt.Errorf("sequential: pair %d: %w", k, err)
		}
		est = append(est, e)
		l, err := s.Decide(est, tolerance, better)
		if err != nil || l.Decision != Continue {
			return l, est, err
		}
	}
	panic("unreachable: Decide returns Undecided at the cap")
}

// smallSampleInflation is the factor by which a variance estimated from
// df degrees of freedom is raised so that the normal test at level alpha
// has the reach of Student's t test: (t_{df,1-alpha} / z_{1-alpha})^2.
// With 3 pairs (2 df) at alpha 0.01 that is 9.0, with 8 pairs 1.66: the
// spread of a few pairs is a poor estimate of the noise between runs,
// and trusting it as if it were exact is what lets a per-run offset of
// one side pass for a regression.
func smallSampleInflation(df int, alpha float64) float64 {
	key := inflationKey{df, alpha}
	inflationMu.Lock()
	defer inflationMu.Unlock()
	if f, ok := inflations[key]; ok {
		return f
	}
	z := -stats.NormalQuantile(alpha)
	t := studentQuantile(1-alpha, df)
	inflations[key] = (t / z) * (t / z)
	return inflations[key]
}

// inflations memoises smallSampleInflation.
var (
	inflationMu sync.Mutex
	inflations  = map[inflationKey]float64{}
)

type inflationKey struct {
	df    int
	alpha float64
}

// studentCDF is the distribution function of Student's t with df degrees
// of freedom at x >= 0, by Simpson's rule on its density.
func studentCDF(x float64, df int) float64 {
	nu := float64(df)
	la, _ := math.Lgamma((nu + 1) / 2)
	lb, _ := math.Lgamma(nu / 2)
	c := math.Exp(la-lb) / math.Sqrt(nu*math.Pi)
	f := func(t float64) float64 { return c * math.Pow(1+t*t/nu, -(nu+1)/2) }
	const steps = 2000
	h := x / steps
	sum := f(0) + f(x)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(float64(i)*h)
	}
	return 0.5 + sum*h/3
}

// studentQuantile is the p-quantile (p > 0.5) of Student's t with df
// degrees of freedom, by bisection.
func studentQuantile(p float64, df int) float64 {
	lo, hi := 0.0, 1000.0
	for range 100 {
		mid := (lo + hi) / 2
		if studentCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
