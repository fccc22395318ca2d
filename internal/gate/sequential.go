package gate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/servegate/servegate/internal/stats"
)

// A Sequential is the design of the fast paired verdict. Pairs of runs
// arrive one at a time. After each pair from MinPairs on, a look fails
// the figure, passes it, or asks for another pair. The last look,
// MaxPairs, always decides, except for a run too noisy to detect twice
// the tolerance: that is Undecided (exit 2).
//
// Each look is stats.Sequential on the mean log ratio of the pairs.
// Its variance is the larger of two estimates: the block bootstraps'
// (noise within a run) and, from 3 pairs on, the spread of the pairs'
// log ratios (noise between runs).
//
// docs/verdicts.md ("How it decides") gives the design and why it is
// closed. The zero value is not usable; start from DefaultSequential.
type Sequential struct {
	// Alpha is the chance of failing a comparison with no change (the
	// A/A false-fail rate); Beta that of passing a regression of exactly
	// the tolerance. Both in (0, 0.5).
	Alpha, Beta float64
	// MinPairs is the fewest pairs before any decision (at least 1);
	// MaxPairs the cap, the last look, which always decides.
	MinPairs, MaxPairs int
	// StudentSpread counts the spread between pairs at the reach of
	// Student's t at the 95% level (smallSampleInflation(k-1, 0.05)),
	// not as if it were exact. The default design sets it. Without it,
	// noise correlated in time passed for a regression.
	StudentSpread bool
}

// DefaultSequential is the fast path's design: false-fail at most 1%,
// a regression of the tolerance caught at least 95% of the time where
// the run can detect it, a decision from 3 pairs on, at most 8 pairs.
func DefaultSequential() Sequential {
	return Sequential{Alpha: 0.01, Beta: 0.05, MinPairs: 3, MaxPairs: 8, StudentSpread: true}
}

// Validate reports a design that cannot run.
func (s Sequential) Validate() error {
	if err := s.closed().Validate(); err != nil {
		return fmt.Errorf("sequential (one look per pair): %w", err)
	}
	return nil
}

// closed is the design as stats.Sequential: one look per pair.
func (s Sequential) closed() stats.Sequential {
	return stats.Sequential{Alpha: s.Alpha, Beta: s.Beta, MinLooks: s.MinPairs, MaxLooks: s.MaxPairs}
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
	// Undecided: the cap was reached on a run so noisy that the
	// smallest regression it could detect is more than twice the
	// tolerance: cannot judge (exit 2), never a pass.
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
		return "too noisy to judge"
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
	// Closed is the closed design's look at the change in the bad
	// direction: its boundaries, what the pairs rule out (Upper) and
	// the smallest regression they can detect (Detectable), all as log
	// ratios.
	Closed stats.Look `json:"closed"`
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
	for i, e := range est {
		if math.IsNaN(e.D) || math.IsInf(e.D, 0) || !(e.SE >= 0) || math.IsInf(e.SE, 0) {
			return Look{}, fmt.Errorf("sequential: pair %d: log ratio %v, standard error %v: want finite values", i+1, e.D, e.SE)
		}
	}
	mean, se := s.pool(est)
	c, err := s.closed().Look(k, bad*mean, se, delta)
	if err != nil {
		return Look{}, fmt.Errorf("sequential: %w", err)
	}
	l := Look{Pairs: k, D: mean, SE: se, Closed: c}
	change := pct(math.Exp(mean) - 1)
	target := pct(math.Exp(bad*delta) - 1) // the tolerance's regression
	switch {
	case c.Decision == stats.Continue:
		l.Decision = Continue
		if k < s.MinPairs {
			l.Why = fmt.Sprintf("%d of at least %d pairs", k, s.MinPairs)
		} else {
			l.Why = fmt.Sprintf("%s (±%.1f%%) after %d pairs: neither a regression (%.2f standard errors) nor a pass (%s at %.2f standard errors) yet", change, 100*se, k, c.FailZ, target, c.PassZ)
		}
	case c.Decision == stats.Fail:
		l.Decision = Regression
		l.Why = fmt.Sprintf("regression: %s (±%.1f%%) over %d pairs, %.2f standard errors above no change (the boundary: %.2f)", change, 100*se, k, zOf(bad*mean, se), c.FailZ)
	case c.Last && c.Detectable > 2*delta:
		l.Decision = Undecided
		l.Why = fmt.Sprintf("cannot judge: %s (±%.1f%%) after %d pairs (the cap): the smallest regression this run could detect is %s, more than twice the tolerance of %s. Remedies: more requests per run, a quieter runner, or a larger tolerance",
			change, 100*se, k, worse(c.Detectable, better), target)
	case c.D <= delta-c.PassZ*c.SE || c.SE == 0:
		l.Decision = NoRegression
		l.Why = fmt.Sprintf("no regression: %s (±%.1f%%) over %d pairs; rules out %s above %s (95%%)", change, 100*se, k, slowdowns(better), worse(c.Upper, better))
	default:
		l.Decision = NoRegression
		l.Why = fmt.Sprintf("no regression ≥ %s shown: %s (±%.1f%%) over %d pairs (the cap); this run rules out %s above %s (95%%)", strings.TrimPrefix(strings.TrimPrefix(target, "+"), "-"), change, 100*se, k, slowdowns(better), worse(c.Upper, better))
	}
	return l, nil
}

// spreadLevel is the one-sided level of StudentSpread's inflation.
const spreadLevel = 0.05

// pool is the pairs' mean log ratio and its standard error: the larger
// of the bootstraps' and, from 3 pairs on, the spread between pairs.
func (s Sequential) pool(est []PairEstimate) (mean, se float64) {
	k := len(est)
	var sumD, sumV float64
	for _, e := range est {
		sumD += e.D
		sumV += e.SE * e.SE
	}
	kf := float64(k)
	mean = sumD / kf
	v := sumV / (kf * kf)
	if k >= 3 {
		var ss float64
		for _, e := range est {
			ss += (e.D - mean) * (e.D - mean)
		}
		emp := ss / (kf - 1) / kf
		if s.StudentSpread {
			emp *= smallSampleInflation(k-1, spreadLevel)
		}
		v = math.Max(v, emp)
	}
	return mean, math.Sqrt(v)
}

// zOf is d in standard errors, 0 without noise.
func zOf(d, se float64) float64 {
	if se == 0 {
		return 0
	}
	return d / se
}

// slowdowns names a regression of a figure whose better direction is
// better: a slowdown of a latency, a drop of a rate.
func slowdowns(better int) string {
	if better == 1 {
		return "drops"
	}
	return "slowdowns"
}

// worse formats a change x in the bad direction, as a log ratio, as the
// relative change it is: +7.3% for a latency, 7.0% lower for a rate
// (as a positive percentage: "drops above 7.0%").
func worse(x float64, better int) string {
	if better == 1 {
		return fmt.Sprintf("%.1f%%", 100*(1-math.Exp(-x)))
	}
	return fmt.Sprintf("%.1f%%", 100*math.Expm1(x))
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
	panic("unreachable: the last look decides")
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
	t := stats.StudentQuantile(1-alpha, df)
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
