package stats

import (
	"errors"
	"fmt"
	"math"
)

// A Sequential is a closed group-sequential design for one gated
// figure. The figure is judged after each pair of runs, a look. Each
// look may fail it, pass it, or ask for another pair. The last look
// always decides. Alpha and Beta are spent in equal shares over the
// looks, so that by the union bound:
//
//   - a figure with no change fails with probability at most Alpha;
//   - a regression of the tolerance passes before the last look with
//     probability at most Beta·(MaxLooks-MinLooks)/(looks).
//
// At the last look a figure fails only when its change is significant.
// Otherwise it passes, and Look.Upper says what the pairs rule out.
type Sequential struct {
	// Alpha is the chance of failing a figure with no change; Beta that
	// of passing a regression of the tolerance. Both in (0, 0.5).
	Alpha, Beta float64
	// MinLooks is the first look that may decide, MaxLooks the last.
	MinLooks, MaxLooks int
}

// Validate reports a design that cannot run.
func (s Sequential) Validate() error {
	var errs []error
	if !(s.Alpha > 0 && s.Alpha < 0.5) {
		errs = append(errs, fmt.Errorf("alpha %v: must be in (0, 0.5)", s.Alpha))
	}
	if !(s.Beta > 0 && s.Beta < 0.5) {
		errs = append(errs, fmt.Errorf("beta %v: must be in (0, 0.5)", s.Beta))
	}
	if s.MinLooks < 1 || s.MaxLooks < s.MinLooks || s.MaxLooks > 100 {
		errs = append(errs, fmt.Errorf("looks %d..%d: want 1 <= first <= last <= 100", s.MinLooks, s.MaxLooks))
	}
	return errors.Join(errs...)
}

// looks is the number of looks that may decide.
func (s Sequential) looks() int { return s.MaxLooks - s.MinLooks + 1 }

// AlphaAt is the share of Alpha spent at look k, 0 where no decision
// is made.
func (s Sequential) AlphaAt(k int) float64 {
	if k < s.MinLooks || k > s.MaxLooks {
		return 0
	}
	return s.Alpha / float64(s.looks())
}

// BetaAt is the share of Beta spent at look k.
func (s Sequential) BetaAt(k int) float64 {
	if k < s.MinLooks || k > s.MaxLooks {
		return 0
	}
	return s.Beta / float64(s.looks())
}

// A Decision is where a figure stands after a look.
type Decision int

const (
	// Continue asks for another pair.
	Continue Decision = iota
	// Pass: no regression of the tolerance.
	Pass
	// Fail: a regression.
	Fail
)

// String names the decision.
func (d Decision) String() string {
	return [...]string{"continue", "pass", "fail"}[d]
}

// A Look is the design's view of a figure after K pairs. Changes are
// log ratios in the bad direction: positive is worse.
type Look struct {
	K int `json:"k"`
	// D is the change; SE its standard error.
	D  float64 `json:"d"`
	SE float64 `json:"se"`
	// Delta is the tolerance as a change.
	Delta float64 `json:"delta"`
	// FailZ is how many standard errors D must be above 0 to fail at
	// this look; PassZ how many below Delta to pass. Both are +Inf
	// before the first look that decides.
	FailZ float64 `json:"fail_z"`
	PassZ float64 `json:"pass_z"`
	// Upper is the one-sided 95% upper bound of the change: the pairs
	// rule out any regression above it.
	Upper float64 `json:"upper"`
	// Detectable is the smallest regression this look's precision
	// catches with probability 95% at its fail boundary.
	Detectable float64 `json:"detectable"`
	// Decision is what the look decided. Last says it is the design's
	// last look, which always decides.
	Decision Decision `json:"decision"`
	Last     bool     `json:"last,omitempty"`
}

// z95 is the one-sided 95% normal quantile.
var z95 = NormalQuantile(0.95)

// Look judges a figure after k pairs: d is its change, se its standard
// error, delta its tolerance, all in log units, bad direction positive.
// A change past both boundaries, which a precise figure can be, fails
// when it is above half the tolerance and passes otherwise.
func (s Sequential) Look(k int, d, se, delta float64) (Look, error) {
	if err := s.Validate(); err != nil {
		return Look{}, err
	}
	switch {
	case k < 1 || k > s.MaxLooks:
		return Look{}, fmt.Errorf("look %d: want 1 to %d", k, s.MaxLooks)
	case math.IsNaN(d) || math.IsInf(d, 0) || !(se >= 0) || math.IsInf(se, 0):
		return Look{}, fmt.Errorf("look %d: change %v, standard error %v: want finite values", k, d, se)
	case !(delta > 0) || math.IsInf(delta, 0):
		return Look{}, fmt.Errorf("look %d: tolerance %v: want a positive change", k, delta)
	}
	l := Look{K: k, D: d, SE: se, Delta: delta, FailZ: math.Inf(1), PassZ: math.Inf(1), Last: k == s.MaxLooks}
	l.Upper = d + z95*se
	if k < s.MinLooks {
		l.Detectable = math.Inf(1)
		return l, nil
	}
	l.FailZ = -NormalQuantile(s.AlphaAt(k))
	l.PassZ = -NormalQuantile(s.BetaAt(k))
	l.Detectable = (l.FailZ + z95) * se
	var fail, pass bool
	if se == 0 {
		fail, pass = d > 0, d < delta
	} else {
		fail, pass = d >= l.FailZ*se, d <= delta-l.PassZ*se
	}
	switch {
	case fail && pass:
		l.Decision = Pass
		if d >= delta/2 {
			l.Decision = Fail
		}
	case fail:
		l.Decision = Fail
	case pass || l.Last:
		l.Decision = Pass
	}
	return l, nil
}
