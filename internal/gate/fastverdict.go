package gate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/servegate/servegate/internal/stats"
)

// The units the fast paired verdict gates, each with the policy's rule
// for it: the TTFT and TPOT quantiles (ttft-p50-sec, tpot-p50-sec,
// ttft-p99-sec, ...) and goodput by the sequential test on their log
// ratio, the failure ratio by a sign test on the requests that failed on
// one side only.
const (
	unitTTFT      = "ttft-p99-sec"
	unitGoodput   = "goodput-req/s"
	unitFailRatio = "fail-ratio"
)

// A FastFigure is one figure the fast verdict judges sequentially, and
// where its test stands.
type FastFigure struct {
	// Unit is the benchfmt unit ("ttft-p50-sec", "goodput-req/s").
	Unit string `json:"unit"`
	// Metric is the per-request metric a quantile unit gates ("ttft" or
	// "tpot"), Q its quantile (0.99 for p99); both empty for goodput.
	Metric string  `json:"metric,omitempty"`
	Q      float64 `json:"q,omitempty"`
	// Tolerance is the policy's relative tolerance; Better +1 when higher
	// is better, -1 when lower is.
	Tolerance float64 `json:"tolerance"`
	Better    int     `json:"better"`
	// Estimates are the pairs' estimates up to the decision.
	Estimates []PairEstimate `json:"estimates"`
	// Look is the last look; its Decision is final once it is not
	// Continue (the figure's later pairs are not read).
	Look Look `json:"look"`
	// thin is the first pair's request pairs when they leave at most one
	// request beyond the quantile, 0 otherwise: with n request pairs, a
	// pNN with n(1 - q) <= 1 is the run's maximum or second, or an
	// interpolation between them, so one or two requests' luck moves
	// it (isThin). Such a figure is judged at
	// every look the other figures need, and a significant regression
	// fails the verdict, but it holds no pair open: once the others
	// have decided, an undecided thin tail is listed as not judged with
	// what it measured and the remedy (decide), as fail-ratio never
	// holds a verdict open. The shipped multi-turn-chat (81 requests)
	// had a p99 TTFT whose two sides raced for a shared prefix, and
	// after 8 pairs it could detect nothing below 52%; in the shipped
	// suite's A/As, the thin p99s of chat-poisson and multi-turn-chat
	// held a verdict to the cap of 8 pairs, about 2 minutes, to end
	// not judged, and ramp-up-linear's (100 requests) ended one at
	// exit 2: its pair 1 measured +66% from two head requests stalled
	// together, and that one pair's spread left 51% detectable at the
	// cap (docs/logs/2026-12-07-suite.md).
	thin int
	// released is set when the verdict ended with this thin tail
	// undecided: it held no pair open.
	released bool
}

// A FastJudge is the fast paired verdict of one scenario: pairs of runs
// arrive one at a time (Add), and after each it decides regression, no
// regression, or another pair. The design's last look always decides
// (see Sequential): a figure with no significant regression there
// passes, and says what the pairs rule out. Only a run too noisy to
// detect twice the tolerance is Undecided (exit 2).
//
// The gated figures are those of the policy it can judge request by
// request: the TTFT and TPOT quantiles (ttft-pNN-sec, tpot-pNN-sec),
// goodput-req/s (when the runs report goodput) and fail-ratio (with an
// absolute tolerance). TPOT is gated rather than ITL because it is one
// number per request, (latency - TTFT) / (output tokens - 1) as vLLM's
// benchmark computes it, so requests pair one to one; a request's ITLs
// are many correlated gaps whose count differs between the sides. Every
// other rule of the policy is listed in NotJudged with the reason: none
// is dropped silently. The design's Alpha is the A/A false-fail of the
// whole verdict: it is split evenly between the gated figures
// (Bonferroni), and the fail-ratio test splits its share again between
// the looks.
//
// A regression of any figure ends the verdict at once (exit 1); no
// regression needs every sequential figure decided (each stops being
// read once it decided); the failure test never holds a verdict up.
type FastJudge struct {
	design   Sequential
	steady   float64
	reps     int
	rng      *rand.Rand
	figures  []*FastFigure
	failTol  float64
	failGate bool
	alphaOne float64 // the per-figure alpha
	// Pairs is the number of pairs read.
	Pairs int
	// Fail counts: failed requests on each side, requests failed on one
	// side only, and requests in all, over the pairs read.
	FailBase, FailHead, OnlyBase, OnlyHead, Total int
	// Decision is the verdict so far; Why says it; Unit is the figure
	// that decided a regression.
	Decision Decision
	Why      string
	Unit     string
	// NotJudged are the policy's rules this verdict does not judge, each
	// with the reason, in the policy's order.
	NotJudged []NotJudged
	goodput   *bool // whether the runs report goodput (set by the first pair)
	tpot      *bool // whether the runs report TPOT (set by the first pair)
}

// A NotJudged is a rule of the policy the paired verdict does not judge.
type NotJudged struct {
	Unit string `json:"unit"`
	Why  string `json:"why"`
}

// NewFastJudge returns the fast verdict of design under pol, on the
// steady-state window steady (PairRun.Window; 0 for every request).
// reps is the bootstrap's replicates (0: BootstrapReps); a nil rng is
// seeded constantly, so that the same files give the same verdict.
func NewFastJudge(design Sequential, pol *Policy, steady float64, reps int, rng *rand.Rand) (*FastJudge, error) {
	if err := design.Validate(); err != nil {
		return nil, err
	}
	if !(steady >= 0 && steady <= MaxSteadyState) {
		return nil, fmt.Errorf("steady-state window %v: want a fraction of the schedule in [0, %v]", steady, MaxSteadyState)
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(1, 27))
	}
	j := &FastJudge{design: design, steady: steady, reps: reps, rng: rng}
	for _, r := range pol.Rules {
		metric, q, ok := quantileUnit(r.Unit)
		switch {
		case ok || r.Unit == unitGoodput:
			if !r.Tolerance.Relative || !(r.Tolerance.Amount > 0 && r.Tolerance.Amount < 1) {
				return nil, fmt.Errorf("the policy's %s tolerance %s: the paired verdict needs a relative tolerance in (0, 100%%)", r.Unit, r.Tolerance)
			}
			f := &FastFigure{Unit: r.Unit, Metric: metric, Q: q, Tolerance: r.Tolerance.Amount, Better: direction(r.Better, -1)}
			if r.Unit == unitGoodput {
				f.Better = direction(r.Better, 1)
			}
			j.figures = append(j.figures, f)
		case r.Unit == unitFailRatio:
			if r.Tolerance.Relative {
				return nil, fmt.Errorf("the policy's %s tolerance %s: the paired verdict needs an absolute one (a share of the requests, such as +0)", unitFailRatio, r.Tolerance)
			}
			j.failGate, j.failTol = true, r.Tolerance.Amount
		default:
			j.NotJudged = append(j.NotJudged, NotJudged{r.Unit, notJudgedWhy(r.Unit)})
		}
	}
	if len(j.figures) == 0 {
		return nil, fmt.Errorf("the policy gates no TTFT or TPOT quantile (such as ttft-p50-sec) nor goodput with a relative tolerance in (0, 100%%): the paired verdict gates one at least")
	}
	j.split()
	return j, nil
}

// notJudgedWhy says why the paired verdict does not judge unit.
func notJudgedWhy(unit string) string {
	switch {
	case strings.ContainsAny(unit, "*?["):
		return "a pattern: the paired verdict judges named units only (ttft-p50-sec, tpot-p50-sec, ...)"
	case unit == "max-rate-req/s":
		return "one figure per run (a capacity search), not request by request; servegate gate judges it on the benchfmt files"
	case strings.HasPrefix(unit, "server-"):
		return "the server's counters, one figure per run, not request by request; servegate gate judges it on the benchfmt files"
	}
	return "the detailed result files carry no request-by-request value the paired verdict reads for it; servegate gate judges it on the benchfmt files"
}

// quantileUnit matches the per-request quantile units the paired
// verdict gates: ttft-pNN-sec and tpot-pNN-sec.
var quantileUnitRE = regexp.MustCompile(`^(ttft|tpot)-p([1-9][0-9]?)-sec$`)

// quantileUnit returns the metric and quantile of a ttft-pNN-sec or
// tpot-pNN-sec unit ("tpot", 0.5 for tpot-p50-sec), false for any other.
func quantileUnit(unit string) (metric string, q float64, ok bool) {
	m := quantileUnitRE.FindStringSubmatch(unit)
	if m == nil {
		return "", 0, false
	}
	n, _ := strconv.Atoi(m[2])
	return m[1], float64(n) / 100, true
}

// ttftQuantile returns the quantile of a ttft-pNN-sec unit (0.99 for
// ttft-p99-sec), false for any other unit or pattern.
func ttftQuantile(unit string) (float64, bool) {
	m, q, ok := quantileUnit(unit)
	return q, ok && m == "ttft"
}

// direction is b, or def when b is 0.
func direction(b, def int) int {
	if b == 0 {
		return def
	}
	return b
}

// split shares the design's alpha between the gated tests.
func (j *FastJudge) split() {
	tests := len(j.figures)
	if j.failGate {
		tests++
	}
	j.alphaOne = j.design.Alpha / float64(tests)
}

// Figures returns the sequential figures and their state.
func (j *FastJudge) Figures() []*FastFigure { return j.figures }

// Done reports whether the verdict is decided (or the run too noisy to judge).
func (j *FastJudge) Done() bool { return j.Decision != Continue }

// Add judges one more pair and returns a line that describes it. An
// error is an input the verdict cannot judge (exit 2).
func (j *FastJudge) Add(run PairRun) (string, error) {
	if j.Done() {
		return "", errors.New("paired verdict: already decided")
	}
	if j.Pairs >= j.design.MaxPairs {
		return "", fmt.Errorf("paired verdict: more than the cap of %d pairs", j.design.MaxPairs)
	}
	j.Pairs++
	k := j.Pairs
	if j.goodput == nil {
		g, tp := run.Goodput, run.TPOT
		j.goodput, j.tpot = &g, &tp
		if !g {
			j.drop(func(f *FastFigure) bool { return f.Unit == unitGoodput }, "the runs report no goodput (the scenario declares no SLOs)")
		}
		if !tp {
			j.drop(func(f *FastFigure) bool { return f.Metric == "tpot" }, "the result files carry no latencies and output_lens, request by request, to compute TPOT from")
		}
	} else if *j.goodput != run.Goodput {
		return "", fmt.Errorf("pair %d: reports goodput while pair 1 does not, or the other way round: pairs of one scenario must have the same SLOs", k)
	} else if *j.tpot != run.TPOT {
		return "", fmt.Errorf("pair %d: reports latencies and output lengths while pair 1 does not, or the other way round: pairs of one scenario must come from one servegate", k)
	}
	if len(j.figures) == 0 && !j.failGate {
		return "", fmt.Errorf("pair %d: no figure of the policy can be judged on these runs: %s", k, j.notJudgedText())
	}
	var line strings.Builder
	fmt.Fprintf(&line, "pair %d:", k)
	// Failures: every request, whatever the window.
	for _, r := range run.Requests {
		j.Total++
		switch {
		case r.BaseFailed && r.HeadFailed:
			j.FailBase++
			j.FailHead++
		case r.BaseFailed:
			j.FailBase++
			j.OnlyBase++
		case r.HeadFailed:
			j.FailHead++
			j.OnlyHead++
		}
	}
	win, err := run.Window(j.steady)
	if err != nil {
		return "", err
	}
	for _, f := range j.figures {
		if f.Look.Decision != Continue && len(f.Estimates) > 0 {
			fmt.Fprintf(&line, " %s decided;", f.Unit)
			continue // decided: its later pairs are not read
		}
		var e PairEstimate
		var note string
		switch f.Unit {
		default: // a TTFT or TPOT quantile
			pairs, dropped := win.ttftPairs()
			if f.Metric == "tpot" {
				pairs, dropped = win.tpotPairs()
			}
			if k == 1 && isThin(len(pairs), f.Q) {
				f.thin = len(pairs) // a thin tail (FastFigure.thin)
			}
			if e, err = BootstrapPair(pairs, f.Q, j.reps, 0, j.rng); err != nil {
				if failed := j.failVerdict(); failed {
					return line.String(), nil
				}
				if len(pairs) < minBootstrapRequests {
					return "", fmt.Errorf("pair %d: %s: %w; the paired verdict needs a scenario of at least %d requests that succeed on both sides: raise its dataset's num_prompts (200 or more keep its p99 off the run's maximum: docs/verdicts.md, scenario sizes), or gate it with servegate compare -mode interleaved", k, f.Unit, err, minBootstrapRequests)
				}
				return "", fmt.Errorf("pair %d: %s: %w", k, f.Unit, err)
			}
			why := "failed"
			if f.Metric == "tpot" {
				why = "failed, or one token"
			}
			note = fmt.Sprintf(" p%s %s %s (±%.1f%%), %d request pairs, %d left out (%s), block %d;", strconv.FormatFloat(100*f.Q, 'f', -1, 64), strings.ToUpper(f.Metric), pct(math.Expm1(e.D)), 100*e.SE, e.Requests, dropped, why, e.Block)
		case unitGoodput:
			e, err = BootstrapCount(win.goodPairs(), win.durationLogRatio(), j.reps, win.timeBlock(), j.rng)
			if errors.Is(err, errNoHeadCount) {
				j.Decision, j.Unit = Regression, f.Unit
				j.Why = fmt.Sprintf("regression of %s after %d pairs: no request of head met the goodput SLO in pair %d, while base's did", f.Unit, k, k)
				return line.String() + " goodput: no request of head met the SLO", nil
			}
			if err != nil {
				return "", fmt.Errorf("pair %d: goodput: %w", k, err)
			}
			note = fmt.Sprintf(" goodput %s (±%.1f%%);", pct(math.Expm1(e.D)), 100*e.SE)
		}
		line.WriteString(note)
		f.Estimates = append(f.Estimates, e)
		d := j.design
		d.Alpha = j.alphaOne
		if f.Look, err = d.Decide(f.Estimates, f.Tolerance, f.Better); err != nil {
			return "", fmt.Errorf("pair %d: %s: %w", k, f.Unit, err)
		}
	}
	if j.failGate {
		fmt.Fprintf(&line, " failures base %d, head %d (of %d);", j.FailBase, j.FailHead, j.Total)
	}
	if j.failVerdict() {
		return strings.TrimSuffix(line.String(), ";"), nil
	}
	j.decide()
	return strings.TrimSuffix(line.String(), ";"), nil
}

// drop stops gating the figures that match, which the runs cannot
// judge, and lists them in NotJudged with why.
func (j *FastJudge) drop(match func(*FastFigure) bool, why string) {
	kept := j.figures[:0]
	for _, f := range j.figures {
		if match(f) {
			j.NotJudged = append(j.NotJudged, NotJudged{f.Unit, why})
			continue
		}
		kept = append(kept, f)
	}
	j.figures = kept
	j.split()
}

// isThin reports whether n request pairs leave at most one request
// beyond the quantile q (FastFigure.thin): a p99 of 100 or fewer.
func isThin(n int, q float64) bool { return float64(n)*(1-q) <= 1+1e-9 }

// thinRemedy is the requests a run that the remedy names: two beyond
// the quantile, 200 for a p99.
func thinRemedy(q float64) int { return int(math.Ceil(2/(1-q) - 1e-9)) }

// notJudged reports a thin tail that was too noisy to judge at the cap,
// or still undecided when the other figures had: decide lists it in
// NotJudged.
func (f *FastFigure) notJudged() bool {
	return f.thin > 0 && (f.Look.Decision == Undecided || f.released)
}

// notJudgedText lists the rules not judged, with why, on one line.
func (j *FastJudge) notJudgedText() string {
	var parts []string
	for _, n := range j.NotJudged {
		parts = append(parts, n.Unit+": "+n.Why)
	}
	return strings.Join(parts, "; ")
}

// failVerdict runs the failure test on the pairs read so far and, on a
// regression, sets the decision and returns true.
func (j *FastJudge) failVerdict() bool {
	if !j.failGate {
		return false
	}
	p := stats.SignTestP(j.OnlyHead, j.OnlyBase)
	level := j.alphaOne / float64(j.design.MaxPairs)
	rise := float64(j.FailHead-j.FailBase) / float64(max(j.Total, 1))
	if p <= level && rise > j.failTol {
		j.Decision, j.Unit = Regression, unitFailRatio
		j.Why = fmt.Sprintf("regression of %s after %d pairs: head failed %d of %d requests, base %d; %d failed on head only, %d on base only (one-sided sign test p = %.2g <= %.2g, the test's share of alpha per look)",
			unitFailRatio, j.Pairs, j.FailHead, j.Total, j.FailBase, j.OnlyHead, j.OnlyBase, p, level)
		return true
	}
	return false
}

// decide sets the verdict from the figures' looks. A regression of any
// figure decides at once. Otherwise the verdict waits for every figure;
// the design's last look decides each, so the cap always ends it: a
// pass, or, when a figure's run was too noisy to judge, Undecided.
func (j *FastJudge) decide() {
	var open, noisy []string
	var first, firstNoisy string // the first open or noisy figure's state
	var passes []string
	var thinOpen []*FastFigure
	for _, f := range j.figures {
		switch f.Look.Decision {
		case Regression:
			j.Decision, j.Unit = Regression, f.Unit
			j.Why = fmt.Sprintf("regression of %s after %d pairs: %s", f.Unit, j.Pairs, f.Look.Why)
			return
		case Continue:
			if f.thin > 0 && j.Pairs < j.design.MaxPairs {
				thinOpen = append(thinOpen, f)
				continue
			}
			open = append(open, f.Unit)
			if first == "" {
				first = f.Look.Why
			}
		case Undecided:
			if f.notJudged() {
				// A tail the scenario is too small for: listed, not
				// held against the verdict (FastFigure.thin).
				need := thinRemedy(f.Q)
				j.NotJudged = append(j.NotJudged, NotJudged{f.Unit, fmt.Sprintf(
					"a p%s over %d request pairs is the run's maximum or next to it, and at the cap it was too noisy to judge (%s): send %d or more requests a run (docs/verdicts.md, scenario sizes), or gate a lower quantile",
					strconv.FormatFloat(100*f.Q, 'f', -1, 64), f.thin, f.Look.Why, need)})
				continue
			}
			noisy = append(noisy, f.Unit)
			if firstNoisy == "" {
				firstNoisy = f.Look.Why
			}
		case NoRegression:
			c := f.Look.Closed
			passes = append(passes, fmt.Sprintf("%s rules out %s above %s", f.Unit, slowdowns(f.Better), worse(c.Upper, f.Better)))
		}
	}
	for _, f := range thinOpen {
		if len(open) > 0 {
			// Still judged while another figure holds the verdict open.
			open = append(open, f.Unit)
			if first == "" {
				first = f.Look.Why
			}
			continue
		}
		f.released = true
		need := thinRemedy(f.Q)
		j.NotJudged = append(j.NotJudged, NotJudged{f.Unit, fmt.Sprintf(
			"a p%s over %d request pairs is the run's maximum or next to it: judged while the other figures needed pairs, it holds none open, and was still open when they had decided (%s): send %d or more requests a run (docs/verdicts.md, scenario sizes), or gate a lower quantile",
			strconv.FormatFloat(100*f.Q, 'f', -1, 64), f.thin, f.Look.Why, need)})
	}
	switch {
	case len(open) > 0 && j.Pairs < j.design.MaxPairs:
		j.Decision = Continue
		j.Why = fmt.Sprintf("%s not decided after %d pairs (%s)", strings.Join(open, ", "), j.Pairs, first)
	case len(open) > 0:
		// Unreachable: the design's last look decides every figure.
		j.Decision = Undecided
		j.Why = fmt.Sprintf("cannot judge: %s open at the cap of %d pairs", strings.Join(open, ", "), j.Pairs)
	case len(noisy) > 0:
		j.Decision = Undecided
		j.Why = fmt.Sprintf("%s: %s", strings.Join(noisy, ", "), firstNoisy)
	default:
		j.Decision = NoRegression
		j.Why = fmt.Sprintf("no regression after %d pairs (95%% bounds: %s)", j.Pairs, strings.Join(passes, "; "))
		if j.failGate {
			j.Why += fmt.Sprintf(", and no significant rise of %s (base %d, head %d failed of %d)", unitFailRatio, j.FailBase, j.FailHead, j.Total)
		}
	}
}

// FigureLines are the verdict's lines per figure: PASS, FAIL or an
// undecided figure's state, with the pairs it used and why it stopped.
func (j *FastJudge) FigureLines() []string {
	var out []string
	for _, f := range j.figures {
		l := f.Look
		if f.notJudged() {
			continue // among the NOT JUDGED lines, with why
		}
		word := "CANNOT JUDGE"
		switch l.Decision {
		case Continue:
			word = "OPEN" // not decided when the verdict stopped, or yet
		case NoRegression:
			word = "PASS"
		case Regression:
			word = "FAIL"
		}
		if len(f.Estimates) == 0 {
			out = append(out, fmt.Sprintf("%s %s: not judged (the verdict stopped first)", word, f.Unit))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s: %d pairs used, stopped: %s", word, f.Unit, l.Pairs, l.Why))
	}
	if j.failGate {
		word := "PASS"
		if j.Unit == unitFailRatio {
			word = "FAIL"
		}
		out = append(out, fmt.Sprintf("%s %s: base %d, head %d failed of %d requests; %d on head only, %d on base only, over %d pairs",
			word, unitFailRatio, j.FailBase, j.FailHead, j.Total, j.OnlyHead, j.OnlyBase, j.Pairs))
	}
	for _, n := range j.NotJudged {
		out = append(out, fmt.Sprintf("NOT JUDGED %s: %s", n.Unit, n.Why))
	}
	return out
}

// Markdown is the verdict as a Markdown fragment for the job summary and
// the pull request comment: the verdict with the pairs it took and why it
// stopped, then a row per gated figure.
func (j *FastJudge) Markdown() string {
	var b strings.Builder
	word := map[Decision]string{NoRegression: "✅ no regression", Regression: "❌ regression", Undecided: "⚠️ cannot judge (exit 2)", Continue: "⚠️ not decided yet (exit 2)"}[j.Decision]
	fmt.Fprintf(&b, "**%s** after %d pair(s): %s\n\n", word, j.Pairs, mdEscape(j.Why))
	b.WriteString("| figure | verdict | pairs | change (± standard error) | why it stopped |\n| --- | --- | --- | --- | --- |\n")
	for _, f := range j.figures {
		l := f.Look
		if f.notJudged() {
			continue // among the not judged rows, with why
		}
		if len(f.Estimates) == 0 {
			fmt.Fprintf(&b, "| `%s` | not judged | 0 | | the verdict stopped first |\n", f.Unit)
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %s (±%.1f%%) | %s |\n", f.Unit, l.Decision, l.Pairs, pct(math.Expm1(l.D)), 100*l.SE, mdEscape(l.Why))
	}
	if j.failGate {
		v := "no significant rise"
		if j.Unit == unitFailRatio {
			v = "regression"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | base %d, head %d of %d | %d failed on head only, %d on base only |\n",
			unitFailRatio, v, j.Pairs, j.FailBase, j.FailHead, j.Total, j.OnlyHead, j.OnlyBase)
	}
	for _, n := range j.NotJudged {
		fmt.Fprintf(&b, "| `%s` | not judged | | | %s |\n", mdEscape(n.Unit), mdEscape(n.Why))
	}
	return b.String()
}
