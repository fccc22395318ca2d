// Package gate is servegate's regression gate: it compares the benchmark
// results of a base and a head revision the way benchstat does and turns
// the comparison into a verdict a CI job can act on.
//
// Results are read with golang.org/x/perf/benchfmt and grouped exactly as
// "benchstat base head" groups them: one table per file configuration
// (.config) and unit, one row per benchmark full name, base and head as
// the two columns. Each row's samples are summarised and compared with
// golang.org/x/perf/benchmath under the unit's assumption (AssumeNothing
// by default: medians, the Mann-Whitney U test; AssumeExact for units
// declared "assume=exact"). A row of a gated unit fails the gate when its
// change is significant (p <= alpha, as benchstat decides), in the unit's
// bad direction, and larger than the policy's tolerance.
//
// Inputs that cannot support a verdict are errors, never a silent pass:
// unreadable files, NaN, infinite or negative-duration values anywhere,
// result lines of runs marked interrupted or invalid, benchmarks present
// on one side only, fewer head runs than base runs, a policy unit no
// input reports, a unit with no known direction, and samples too small
// for the U test to ever reach significance. Head runs that report no
// value of a gated unit (servegate writes none for a run with no
// successful request) fail the gate rather than leave the survivors to be
// compared; fail-ratio is gated by default.
package gate

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"

	"github.com/servegate/servegate/internal/stats"
)

// A Config says what the gate compares.
type Config struct {
	// Base and Head are benchfmt files (or directories of *.txt,
	// *.bench and *.benchfmt files): plain "go test -bench" output or
	// servegate's result files. Several runs may be split across files.
	Base, Head []string

	// Policy selects the gated units; nil means DefaultPolicy.
	Policy *Policy

	// Filter is a benchstat -filter expression; empty keeps everything.
	Filter string

	// Ignore lists file or name keys to ignore when grouping, as
	// benchstat's -ignore (for example "commit,date").
	Ignore string

	// Paired compares the gated rows pair by pair (see PairedTest):
	// every result line must carry a pair: key, and every pair both a
	// base and a head run. The rows the policy does not gate keep
	// benchstat's unpaired statistics.
	Paired bool
}

// A Verdict is the outcome of the gate or of one gated comparison.
type Verdict string

// The verdicts. Main exits 0, 1 and 2 for them.
const (
	Pass  Verdict = "pass"
	Fail  Verdict = "fail"
	Error Verdict = "error"
)

// A Sample summarises one side of a comparison.
type Sample struct {
	// N is the number of runs.
	N int `json:"n"`
	// Center is the median (AssumeNothing) or the exact value
	// (AssumeExact), in the unit.
	Center float64 `json:"center"`
	// Lo and Hi bound the confidence interval of Center; they are
	// infinite when there are too few runs for one (fewer than 6 at 95%),
	// null in JSON.
	Lo float64 `json:"-"`
	Hi float64 `json:"-"`
	// Range is benchstat's "± x%" rendering of the interval.
	Range string `json:"range"`
	// Values are the runs' values in ascending order.
	Values []float64 `json:"values"`
}

// Run reads both sides and gates them. The Report is nil only when the
// inputs could not be read; otherwise it is returned even with an error,
// so that the table can be shown next to the problem. The error joins
// every problem in Report.Errors.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	pol := cfg.Policy
	if pol == nil {
		pol = DefaultPolicy()
	}
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	in, err := read(cfg.Base, cfg.Head, cfg.Filter, cfg.Ignore, cfg.Paired)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep := evaluate(in, pol, cfg.Paired)
	if len(rep.Errors) == 0 {
		return rep, nil
	}
	errs := make([]error, len(rep.Errors))
	for i, e := range rep.Errors {
		errs[i] = errors.New(e)
	}
	return rep, errors.Join(errs...)
}

// evaluate compares every cell and applies the policy; paired gated rows
// are compared pair by pair.
func evaluate(in *inputs, pol *Policy, paired bool) *Report {
	in.paired = paired
	rep := &Report{Alpha: pol.Alpha, Confidence: pol.Confidence, Holm: pol.Holm, Paired: paired, Warnings: in.warnings}
	thr := benchmath.DefaultThresholds
	thr.CompareAlpha = pol.Alpha

	var gated []*Comparison
	for _, tk := range in.tables {
		unit := tk.Get(in.unit)
		rule, isGated := pol.rule(unit)
		for _, rk := range in.rows {
			c, ok := in.cells[cellKey{tk, rk}]
			if !ok {
				continue
			}
			cmp := &Comparison{Benchmark: rk.StringValues(), Config: in.config(tk), Unit: unit, Gated: isGated, Alpha: pol.Alpha}
			rep.Comparisons = append(rep.Comparisons, cmp)
			summarize(cmp, c, in, &thr, pol.Confidence)
			cmp.Significant = cmp.Base != nil && cmp.Head != nil && cmp.P <= pol.Alpha
			if !isGated || cmp.problem != nil {
				continue
			}
			cmp.Tolerance = rule.Tolerance
			cmp.Better = rule.Better
			if cmp.Better == 0 {
				cmp.Better = Direction(in.units, unit)
			}
			if cmp.Tolerance.Sign == 0 {
				cmp.Tolerance.Sign = -cmp.Better // unsigned means "worse by"
			}
			if in.lostValues(cmp, tk, rk) || in.unmatched(cmp, tk, rk) {
				continue
			}
			if paired && pairUp(cmp, c) {
				continue
			}
			gated = append(gated, cmp)
		}
	}
	for _, r := range pol.Rules {
		if !r.Optional && !in.matches(r.Unit) {
			rep.Errors = append(rep.Errors, fmt.Sprintf("policy: gated unit %q is in neither input (units: %s)", r.Unit, in.unitList()))
		}
	}

	// Holm–Bonferroni over the comparisons that have both sides.
	ps := make([]float64, len(gated))
	for i, c := range gated {
		ps[i] = c.P
	}
	adj := ps
	if pol.Holm {
		adj = stats.Holm(ps)
	}
	for i, c := range gated {
		c.PAdjusted = adj[i]
		judge(c, pol, len(gated))
	}
	rep.Errors = append(rep.Errors, problems(rep.Comparisons)...)
	nGated := 0
	for _, c := range rep.Comparisons {
		if c.Gated {
			nGated++
		}
	}
	if nGated == 0 && len(rep.Errors) == 0 {
		rep.Errors = append(rep.Errors, fmt.Sprintf("no gated unit in the inputs: the policy gates %s; the inputs report %s", pol.unitList(), in.unitList()))
	}
	rep.Verdict = rep.verdict()
	return rep
}

// summarize fills the statistics of one row exactly as benchstat
// computes its cells: benchmath.NewSample per side, the unit's
// assumption's Summary for each and Compare(base, head).
func summarize(cmp *Comparison, c *cell, in *inputs, thr *benchmath.Thresholds, confidence float64) {
	assumption := in.units.GetAssumption(cmp.Unit)
	cmp.Assume = "nothing"
	if assumption == benchmath.AssumeExact {
		cmp.Assume = "exact"
	}
	if len(c.residue) > 1 {
		keys := make([]benchproc.Key, 0, len(c.residue))
		for k := range c.residue {
			keys = append(keys, k)
		}
		var names []string
		for _, f := range benchproc.NonSingularFields(keys) {
			names = append(names, f.Name)
		}
		cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("benchmarks vary in %v", names))
	}
	if !finite(c.base) || !finite(c.head) {
		// read refuses these; never let one reach the U test, which
		// does not return on a NaN.
		cmp.Verdict, cmp.Reason = Error, "not a finite number"
		cmp.problem = &problem{group: "finite", what: cmp.Benchmark + " " + cmp.Unit, msg: func(whats string) string {
			return "bad value: NaN or an infinity in " + whats
		}}
		return
	}
	var bs, hs *benchmath.Sample
	side := func(values []float64) (*Sample, *benchmath.Sample) {
		if len(values) == 0 {
			return nil, nil
		}
		s := benchmath.NewSample(append([]float64(nil), values...), thr)
		sum := assumption.Summary(s, confidence)
		for _, w := range append(s.Warnings, sum.Warnings...) {
			cmp.Warnings = appendUnique(cmp.Warnings, w.Error())
		}
		return &Sample{N: len(s.Values), Center: sum.Center, Lo: sum.Lo, Hi: sum.Hi, Range: sum.PctRangeString(), Values: s.Values}, s
	}
	cmp.Base, bs = side(c.base)
	cmp.Head, hs = side(c.head)
	if bs == nil || hs == nil {
		return
	}
	res := assumption.Compare(bs, hs)
	cmp.P, cmp.PAdjusted = res.P, res.P
	for _, w := range res.Warnings {
		cmp.Warnings = appendUnique(cmp.Warnings, w.Error())
	}
	cmp.Delta = relChange(cmp.Base.Center, cmp.Head.Center)
}

// lostValues judges a gated row whose sides report the unit in fewer
// runs than they have, and reports whether it did. A run leaves out the
// latencies and throughputs it could not measure (servegate writes none
// for a run with no successful request), so comparing only the runs that
// report a value would compare survivors:
//
//   - head runs without a value that base reports: Fail, whatever the
//     other head runs say;
//   - fewer head values than base values otherwise (head has fewer
//     runs): Error, the head cannot be judged on less evidence than base;
//   - no base value in any base run while head has values: Error, there
//     is nothing to compare against;
//   - some base runs without a value: a warning.
func (in *inputs) lostValues(cmp *Comparison, tk, rk benchproc.Key) bool {
	nb, nh := 0, 0
	if cmp.Base != nil {
		nb = cmp.Base.N
	}
	if cmp.Head != nil {
		nh = cmp.Head.N
	}
	runsBase, runsHead := in.runCount(tk, rk)
	unit := cmp.Unit
	switch {
	case nb > 0 && nh < runsHead:
		cmp.Verdict = Fail
		cmp.Reason = fmt.Sprintf("no %s in %d of %d head runs (base has it in %d of %d): a run with no successful request reports no latency or throughput",
			unit, runsHead-nh, runsHead, nb, runsBase)
		return true
	case nb > 0 && runsHead > 0 && nh < nb && !in.paired: // paired: pairUp names the pairs missing a partner
		cmp.Verdict, cmp.Reason = Error, fmt.Sprintf("fewer head runs than base runs (%d < %d)", nh, nb)
		cmp.problem = &problem{group: fmt.Sprintf("fewer:%d:%d", nh, nb), what: cmp.Benchmark + " " + unit, msg: func(whats string) string {
			return fmt.Sprintf("too few head runs: %d head against %d base runs of %s: the gate does not judge a head on fewer runs than its base; rerun head with -count %d",
				nh, nb, whats, nb)
		}}
		return true
	case nb == 0 && nh > 0 && runsBase > 0:
		cmp.Verdict, cmp.Reason = Error, fmt.Sprintf("no %s in any of %d base runs", unit, runsBase)
		cmp.problem = &problem{group: "nobase:" + unit, what: cmp.Benchmark, msg: func(whats string) string {
			return fmt.Sprintf("no base value: none of the base runs of %s reports %s (a run with no successful request reports no latency or throughput), so head has nothing to be compared with; fix and rerun base",
				whats, unit)
		}}
		return true
	case nb > 0 && nb < runsBase:
		cmp.Warnings = appendUnique(cmp.Warnings, fmt.Sprintf("no %s in %d of %d base runs", unit, runsBase-nb, runsBase))
	}
	return false
}

// unmatched records the problem of a gated row that one side lacks and
// reports whether there is one.
func (in *inputs) unmatched(cmp *Comparison, tk, rk benchproc.Key) bool {
	if cmp.Base != nil && cmp.Head != nil {
		return false
	}
	have, lack := sideHead, sideBase
	if cmp.Head == nil {
		have, lack = sideBase, sideHead
	}
	cmp.Verdict, cmp.Reason = Error, "only in "+have
	// The same benchmark under another file configuration?
	for _, other := range in.tables {
		if other == tk || other.Get(in.unit) != cmp.Unit {
			continue
		}
		oc, ok := in.cells[cellKey{other, rk}]
		if !ok || (have == sideBase && len(oc.head) == 0) || (have == sideHead && len(oc.base) == 0) {
			continue
		}
		b, h := tk, other
		if have == sideHead {
			b, h = other, tk
		}
		desc, keys := in.configDiff(b, h)
		cmp.Reason = "file configuration differs from " + lack + "'s"
		cmp.problem = &problem{group: "config:" + desc, what: cmp.Benchmark, msg: func(whats string) string {
			return fmt.Sprintf("mismatched inputs: base and head differ in file configuration (%s) for %s; pass -ignore %s to compare them anyway",
				desc, whats, strings.Join(keys, ","))
		}}
		return true
	}
	cmp.problem = &problem{group: "only:" + have, what: cmp.Benchmark, msg: func(whats string) string {
		return fmt.Sprintf("mismatched inputs: gated benchmarks in %s but not in %s: %s", have, lack, whats)
	}}
	return true
}

// A problem is why a gated row cannot be judged. Problems of one group
// are reported as one error naming every row.
type problem struct {
	group string
	what  string
	msg   func(whats string) string
}

// problems merges the problems of the comparisons into error messages.
func problems(cmps []*Comparison) []string {
	var order []string
	groups := map[string][]string{}
	msgs := map[string]func(string) string{}
	for _, c := range cmps {
		p := c.problem
		if p == nil {
			continue
		}
		if _, ok := groups[p.group]; !ok {
			order = append(order, p.group)
			msgs[p.group] = p.msg
		}
		groups[p.group] = appendUnique(groups[p.group], p.what)
	}
	out := make([]string, len(order))
	for i, g := range order {
		out[i] = msgs[g](listOf(groups[g]))
	}
	return out
}

// listOf joins names, shortening long lists.
func listOf(names []string) string {
	if len(names) > 4 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
	}
	return strings.Join(names, ", ")
}

func (in *inputs) matches(pattern string) bool {
	for u := range in.seen {
		if ok, _ := path.Match(pattern, u); ok {
			return true
		}
	}
	return false
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// unitList lists the units seen in the inputs, sorted.
func (in *inputs) unitList() string {
	units := make([]string, 0, len(in.seen))
	for u := range in.seen {
		units = append(units, u)
	}
	sort.Strings(units)
	return strings.Join(units, ", ")
}
