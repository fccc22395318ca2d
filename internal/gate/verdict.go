package gate

import (
	"fmt"
	"math"

	"golang.org/x/perf/benchunit"

	"github.com/servegate/servegate/internal/stats"
)

// A Comparison is one row of the gate: one benchmark and unit under one
// file configuration, base against head.
type Comparison struct {
	// Benchmark is the full benchmark name, as benchstat's .fullname
	// row (for example "Scenarios/scenario=chat-poisson").
	Benchmark string `json:"benchmark"`
	// Config is the file configuration shared by both sides.
	Config []KeyValue `json:"config,omitempty"`
	// Unit is the (tidied) benchfmt unit.
	Unit string `json:"unit"`
	// Assume is the unit's statistical assumption: "nothing" or "exact".
	Assume string `json:"assume"`
	// Base and Head summarise each side; nil when a side has no runs.
	Base *Sample `json:"base"`
	Head *Sample `json:"head"`
	// Delta is the relative change of the centers, head/base - 1
	// (0.1 is +10%); ±Inf when the base center is 0 and the head's is not.
	Delta float64 `json:"-"`
	// P is benchmath's p-value (the two-sided Mann-Whitney U test under
	// AssumeNothing, 0 under AssumeExact); PAdjusted is P after the
	// Holm–Bonferroni correction, or P when it is off.
	P         float64 `json:"p"`
	PAdjusted float64 `json:"p_adjusted"`
	// Alpha is the significance level the row is judged at.
	Alpha float64 `json:"alpha"`
	// Significant reports PAdjusted <= Alpha (benchstat's rule).
	Significant bool `json:"significant"`

	// Gated reports whether the policy gates this unit; the fields
	// below are set only for gated rows.
	Gated bool `json:"gated"`
	// Better is +1 when higher values are better, -1 when lower are.
	Better    int       `json:"-"`
	Tolerance Tolerance `json:"-"`
	// Verdict is Pass, Fail or Error; Reason says why in words.
	Verdict Verdict `json:"verdict,omitempty"`
	Reason  string  `json:"reason,omitempty"`

	// Paired is the paired comparison of a gated row in paired mode
	// (Config.Paired); P, PAdjusted and Delta are then its signed-rank
	// p-value and median ratio - 1.
	Paired *PairedTest `json:"paired,omitempty"`

	// Warnings are benchmath's and benchstat's notes on the samples.
	Warnings []string `json:"warnings,omitempty"`

	problem *problem // why Verdict is Error
}

// relChange returns new/old - 1, 0 when equal, ±Inf when old is 0.
func relChange(old, new float64) float64 {
	switch {
	case old == new:
		return 0
	case old == 0:
		return math.Copysign(math.Inf(1), new)
	}
	return new/old - 1
}

// judge decides a gated comparison that has both sides. gated is the
// number of gated comparisons, which sets the Holm threshold.
func judge(c *Comparison, pol *Policy, gated int) {
	alpha := c.Alpha
	if c.Better == 0 {
		c.Verdict, c.Reason = Error, "unit has no direction"
		unit := c.Unit
		c.problem = &problem{group: "direction:" + unit, what: c.Benchmark, msg: func(string) string {
			return fmt.Sprintf("gated unit %s has no direction: add \"Unit %s better=lower\" (or better=higher) to the inputs, or better: to its policy entry", unit, unit)
		}}
		return
	}
	bad := -c.Better // the sign of a change for the worse
	if t := c.Tolerance; t.Sign != bad {
		want := t
		want.Sign = bad
		c.Verdict, c.Reason = Error, "tolerance points the good way"
		msg := fmt.Sprintf("policy: %s: tolerance %s points the good way (%s is better); write %s", c.Unit, t, directionWord(c.Better), want)
		c.problem = &problem{group: "sign:" + c.Unit, what: c.Benchmark, msg: func(string) string { return msg }}
		return
	}
	need := alpha
	if pol.Holm {
		need = alpha / float64(gated)
	}
	if c.Paired != nil {
		if minP := stats.MinSignedRankP(c.Paired.Pairs); minP > need {
			c.Verdict, c.Reason = Error, fmt.Sprintf("too few pairs (%d)", c.Paired.Pairs)
			c.problem = tooFewPairs(c, minP, need, pol)
			return
		}
		if math.IsNaN(c.Delta) {
			c.Verdict, c.Reason = Error, "no median ratio"
			msg := fmt.Sprintf("paired: %s %s: the median head/base ratio is undefined (zero base values)", c.Benchmark, c.Unit)
			c.problem = &problem{group: "nanratio:" + c.Unit, what: c.Benchmark, msg: func(string) string { return msg }}
			return
		}
	} else if c.Assume == "nothing" {
		if minP := stats.MinUTestP(c.Base.N, c.Head.N); minP > need {
			c.Verdict, c.Reason = Error, fmt.Sprintf("too few samples (%d+%d runs)", c.Base.N, c.Head.N)
			c.problem = tooFew(c, minP, need, pol)
			return
		}
	}
	c.Significant = c.PAdjusted <= alpha
	// badMove is the change in the bad direction: relative or absolute.
	badMove := float64(bad) * c.Delta
	if !c.Tolerance.Relative {
		badMove = float64(bad) * absMove(c)
	}
	pName := "p"
	if pol.Holm {
		pName = "Holm-adjusted p"
	}
	p := fmt.Sprintf("%s=%.3f", pName, c.PAdjusted)
	if c.Paired != nil {
		p = fmt.Sprintf("paired, %d pairs, signed-rank %s", c.Paired.Pairs, p)
	}
	if c.Assume == "exact" && c.Paired == nil {
		p = "exact"
	}
	switch {
	case !c.Significant:
		c.Verdict, c.Reason = Pass, fmt.Sprintf("no significant change (%s > α=%v)", p, alpha)
	case c.Paired == nil && c.Head.Center == c.Base.Center:
		c.Verdict, c.Reason = Pass, fmt.Sprintf("no change (%s)", p)
	case badMove <= 0:
		c.Verdict, c.Reason = Pass, fmt.Sprintf("better: %s (%s)", pct(c.Delta), p)
	case badMove <= c.Tolerance.Amount:
		c.Verdict, c.Reason = Pass, fmt.Sprintf("worse: %s, within tolerance %s (%s)", change(c), c.Tolerance, p)
	default:
		c.Verdict, c.Reason = Fail, fmt.Sprintf("regression: %s, beyond tolerance %s (%s)", change(c), c.Tolerance, p)
	}
}

// tooFew explains why a comparison cannot reach significance.
func tooFew(c *Comparison, minP, need float64, pol *Policy) *problem {
	level := fmt.Sprintf("alpha %v", pol.Alpha)
	if pol.Holm {
		level = fmt.Sprintf("alpha %v / %d gated comparisons (Holm) = %.4g", pol.Alpha, int(math.Round(pol.Alpha/need)), need)
	}
	n1, n2, runs := c.Base.N, c.Head.N, stats.RunsNeeded(need)
	return &problem{group: fmt.Sprintf("few:%d:%d", n1, n2), what: c.Benchmark + " " + c.Unit, msg: func(whats string) string {
		return fmt.Sprintf("too few samples: %d base and %d head runs of %s: "+
			"the smallest p-value the Mann-Whitney U test can give with so few runs is %.3f, above %s, so no change could ever be significant; "+
			"that needs at least %d runs per side (benchstat's rule: 4 at alpha 0.05), and a 95%% confidence interval needs 6; rerun both sides with -count %d or more",
			n1, n2, whats, minP, level, runs, max(runs, 6))
	}}
}

// tooFewPairs explains why a paired comparison cannot reach significance.
func tooFewPairs(c *Comparison, minP, need float64, pol *Policy) *problem {
	level := fmt.Sprintf("alpha %v", pol.Alpha)
	if pol.Holm {
		level = fmt.Sprintf("alpha %v / %d gated comparisons (Holm) = %.4g", pol.Alpha, int(math.Round(pol.Alpha/need)), need)
	}
	n, pairs := c.Paired.Pairs, stats.PairsNeeded(need)
	return &problem{group: fmt.Sprintf("fewpairs:%d", n), what: c.Benchmark + " " + c.Unit, msg: func(whats string) string {
		return fmt.Sprintf("too few pairs: %d pairs of %s: the smallest p-value the signed-rank test can give with %d pairs is %.3f (2/2^%d), above %s, "+
			"so no change could ever be significant; run at least %d pairs", n, whats, n, minP, n, level, pairs)
	}}
}

// absMove is a comparison's change in the unit: the median per-pair
// difference when paired, else the difference of the centers.
func absMove(c *Comparison) float64 {
	if c.Paired != nil {
		return c.Paired.MedianDiff
	}
	return c.Head.Center - c.Base.Center
}

// change formats a comparison's move in the tolerance's terms.
func change(c *Comparison) string {
	if c.Tolerance.Relative {
		return pct(c.Delta)
	}
	d := absMove(c)
	sign := "+"
	if d < 0 {
		sign = "-"
	}
	return sign + benchunit.Scale(math.Abs(d), benchunit.ClassOf(c.Unit)) + " " + c.Unit
}

// pct formats a relative change as benchstat does ("+12.34%").
func pct(d float64) string {
	if math.IsInf(d, 0) {
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", d*100)
}

// A Report is the gate's result: every comparison, gated or not, and the
// verdict.
type Report struct {
	// Verdict is Error when Errors is not empty, else Fail when any
	// gated comparison failed, else Pass.
	Verdict Verdict `json:"verdict"`
	// Alpha, Confidence and Holm are the settings used.
	Alpha      float64 `json:"alpha"`
	Confidence float64 `json:"confidence"`
	Holm       bool    `json:"holm"`
	// Paired reports a paired comparison (Config.Paired).
	Paired bool `json:"paired,omitempty"`
	// Comparisons are in benchstat's table and row order.
	Comparisons []*Comparison `json:"comparisons"`
	// Errors are the problems that make a verdict impossible (exit 2).
	Errors []string `json:"errors,omitempty"`
	// Warnings are non-fatal problems (syntax errors in the inputs,
	// units present on one side only).
	Warnings []string `json:"warnings,omitempty"`
}

func (r *Report) verdict() Verdict {
	if len(r.Errors) > 0 {
		return Error
	}
	for _, c := range r.Comparisons {
		if c.Verdict == Fail {
			return Fail
		}
	}
	return Pass
}

// ExitCode returns the gate's exit status for the report: 0 pass,
// 1 regression, 2 bad input.
func (r *Report) ExitCode() int {
	switch r.Verdict {
	case Pass:
		return 0
	case Fail:
		return 1
	}
	return 2
}

// Failures returns the gated comparisons that failed.
func (r *Report) Failures() []*Comparison {
	var out []*Comparison
	for _, c := range r.Comparisons {
		if c.Verdict == Fail {
			out = append(out, c)
		}
	}
	return out
}
