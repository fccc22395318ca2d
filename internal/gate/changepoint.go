package gate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/servegate/servegate/internal/stats"
	"github.com/servegate/servegate/internal/store"
)

// Change-point mode: "servegate gate -history DIR" reads one result file per
// commit of main, in file name order, and looks for persistent shifts in
// every gated unit with E-divisive means (edivisive.go). Where the
// two-sample gate asks "is this pull request slower than its base?",
// history asks "did main get slower at some commit, and at which?", and
// adapts to each series' own noise.

// historyAlpha is the default significance level of change-point mode: a
// history is tested once per gated series and per change point, so it
// takes a stricter level than a single comparison.
const historyAlpha = 0.01

// changePointSeed seeds the permutation tests: the same history always gets
// the same answer.
const changePointSeed = 20141

// A ChangePointReport is the outcome of change-point mode.
type ChangePointReport struct {
	Dir string `json:"dir"`
	// Runner is the runner type read from a results store.
	Runner  string   `json:"runner,omitempty"`
	Commits []string `json:"commits"` // in order
	// CommitTimes are the commits' times, from a results store.
	CommitTimes []time.Time      `json:"commit_times,omitempty"`
	Alpha       float64          `json:"alpha"`
	Series      []*HistorySeries `json:"series"`
	Notes       []string         `json:"notes,omitempty"`
	Verdict     Verdict          `json:"verdict"`
}

// A HistorySeries is one gated unit of one benchmark over the commits.
type HistorySeries struct {
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"`
	Better    string `json:"better"`
	Tolerance string `json:"tolerance"`
	// Commits and Values are the points: each commit's median of the
	// series' valid results. A commit without one is left out. Low and
	// High are the smallest and largest of the commit's results, Runs
	// their number.
	Commits []string  `json:"commits"`
	Values  []float64 `json:"values"`
	Low     []float64 `json:"low"`
	High    []float64 `json:"high"`
	Runs    []int     `json:"runs"`
	// From is the first point the change points were searched from (the
	// window of the newest points).
	From    int            `json:"from"`
	Changes []*ChangePoint `json:"changes"`
	// Skipped says why the series was not analysed (too few points).
	Skipped string `json:"skipped,omitempty"`
}

// A ChangePoint is one persistent shift.
type ChangePoint struct {
	Commit string  `json:"commit"` // the first commit after the change
	Index  int     `json:"index"`  // its point in the series
	Before float64 `json:"before"` // median of the segment before
	After  float64 `json:"after"`  // median of the segment after
	Change float64 `json:"change"` // (After − Before) / |Before|; NaN when Before is 0
	P      float64 `json:"p"`
	// Kind is "regression" or "improvement" past the tolerance, else
	// "within tolerance".
	Kind string `json:"kind"`
}

// Kinds of change.
const (
	changeRegression  = "regression"
	changeImprovement = "improvement"
	changeWithin      = "within tolerance"
)

// RunChangePoints reads dir and analyses every series a rule of pol gates.
// dir is a results store (internal/store; its only runner type, else an
// error that lists them: see RunChangePointsStore) or a directory of result
// files, one per commit, in name order (see expand). The commit of such
// a file is its "commit:" configuration value, else its name without
// extension. Invalid or interrupted results are left out, with a note.
func RunChangePoints(dir string, pol *Policy, alpha float64) (*ChangePointReport, error) {
	if store.IsStore(dir) {
		st, err := store.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		return RunChangePointsStore(st, ChangePointOptions{Policy: pol, Alpha: alpha})
	}
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	files, err := expand([]string{dir})
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if len(files) > historyMaxPoints {
		return nil, fmt.Errorf("history: %s holds %d result files; at most %d are analysed: keep the newest", dir, len(files), historyMaxPoints)
	}
	in := make([]historyCommit, len(files))
	for i, f := range files {
		in[i] = historyCommit{id: strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), files: []string{f}, named: true}
	}
	return analyseChangePoints(dir, in, pol, alpha, historyMaxPoints)
}

// ChangePointOptions are the settings of RunChangePointsStore.
type ChangePointOptions struct {
	// Runner is the runner type whose commits are read; "" when the
	// store holds one.
	Runner string
	// Policy says which units are gated; nil means DefaultPolicy.
	Policy *Policy
	// Alpha is the significance level; 0 means 0.01.
	Alpha float64
	// Window is how many of the newest commits the change points are
	// searched in (older ones are still reported as points); 0 or more
	// than 500 means 500.
	Window int
}

// RunChangePointsStore analyses one runner type's commits of a results store
// (internal/store), oldest first by commit time.
func RunChangePointsStore(st *store.Store, opt ChangePointOptions) (*ChangePointReport, error) {
	pol := opt.Policy
	if pol == nil {
		pol = DefaultPolicy()
	}
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	alpha := cmp.Or(opt.Alpha, historyAlpha)
	window := opt.Window
	if window <= 0 || window > historyMaxPoints {
		window = historyMaxPoints
	}
	runner := opt.Runner
	if runner == "" {
		runners, err := st.Runners()
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		if len(runners) > 1 {
			return nil, fmt.Errorf("history: %s holds runs of %d runner types (%s): pick one with -runner", st.Dir, len(runners), strings.Join(runners, ", "))
		}
		runner = runners[0]
	}
	defer st.ReadLock()() // no prune removes a commit while its files are read
	commits, notes, err := st.Commits(runner)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	in := make([]historyCommit, len(commits))
	for i, c := range commits {
		in[i] = historyCommit{id: c.ID, time: c.Time, files: c.FilesOf(store.KindBenchfmt)}
	}
	rep, err := analyseChangePoints(st.Dir, in, pol, alpha, window)
	if rep != nil {
		rep.Runner = runner
		rep.Notes = append(notes, rep.Notes...)
	}
	return rep, err
}

// A historyCommit is one commit's input: its benchfmt files.
type historyCommit struct {
	id    string
	time  time.Time
	files []string
	// named: the id is a file name, which a "commit:" key overrides.
	named bool
}

// seriesKey names a series.
type seriesKey struct{ bench, unit string }

// analyseChangePoints reads the commits' files (oldest first) and finds the
// change points of each gated series in its newest window points.
func analyseChangePoints(dir string, in []historyCommit, pol *Policy, alpha float64, window int) (*ChangePointReport, error) {
	rep := &ChangePointReport{Dir: dir, Alpha: alpha}
	values := map[seriesKey]map[int][]float64{} // series → commit index → values
	shas := map[string]map[int]string{}         // benchmark → commit index → scenario-sha
	var order []seriesKey
	units := benchfmt.UnitMetadataMap{}
	for i, hc := range in {
		commit := hc.id
		refused := 0
		rd := benchfmt.Files{Paths: hc.files}
		for rd.Scan() {
			switch rec := rd.Result().(type) {
			case *benchfmt.SyntaxError:
				return nil, fmt.Errorf("history: %v", rec)
			case *benchfmt.Result:
				if c := string(rec.GetConfig("commit")); c != "" && hc.named {
					commit = c
				}
				if msg := badValue(rec); msg != "" {
					file, line := rec.Pos()
					return nil, fmt.Errorf("history: %s:%d: %s", file, line, msg)
				}
				if unusable(rec) != "" {
					refused++
					continue
				}
				bench := string(rec.Name.Full())
				if shas[bench] == nil {
					shas[bench] = map[int]string{}
				}
				shas[bench][i] = string(rec.GetConfig(scenarioSHAKey))
				for _, v := range rec.Values {
					if _, ok := pol.rule(v.Unit); !ok {
						continue
					}
					k := seriesKey{bench, v.Unit}
					if values[k] == nil {
						values[k] = map[int][]float64{}
						order = append(order, k)
					}
					values[k][i] = append(values[k][i], v.Value)
				}
			}
		}
		if err := rd.Err(); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		for k, m := range rd.Units() {
			units[k] = m
		}
		if refused > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d invalid or interrupted result line(s) left out", commit, refused))
		}
		rep.Commits = append(rep.Commits, commit)
		if !hc.time.IsZero() {
			rep.CommitTimes = append(rep.CommitTimes, hc.time)
		}
	}
	rep.Notes = append(rep.Notes, keepNewestVersion(values, shas)...)
	for _, r := range pol.Rules {
		if !r.Optional && !slices.ContainsFunc(order, func(k seriesKey) bool { ok, _ := path.Match(r.Unit, k.unit); return ok }) {
			return nil, fmt.Errorf("history: %s: no result reports %s, which the policy gates", dir, r.Unit)
		}
	}
	slices.SortStableFunc(order, func(a, b seriesKey) int { return strings.Compare(a.bench+"\x00"+a.unit, b.bench+"\x00"+b.unit) })
	analysed := 0
	for _, k := range order {
		rule, _ := pol.rule(k.unit)
		better := rule.Better
		if better == 0 {
			better = Direction(units, k.unit)
		}
		s := &HistorySeries{Benchmark: k.bench, Unit: k.unit, Better: directionWord(better), Tolerance: rule.Tolerance.String()}
		for i, c := range rep.Commits {
			if vs := values[k][i]; len(vs) > 0 {
				s.Commits = append(s.Commits, c)
				s.Values = append(s.Values, stats.Median(vs))
				s.Low = append(s.Low, slices.Min(vs))
				s.High = append(s.High, slices.Max(vs))
				s.Runs = append(s.Runs, len(vs))
			}
		}
		if len(s.Values) == 0 {
			continue // every point was another scenario version's
		}
		rep.Series = append(rep.Series, s)
		s.From = max(0, len(s.Values)-window)
		if n := len(s.Values) - s.From; n < 2*historyMinSegment {
			s.Skipped = fmt.Sprintf("%d commit(s) with results; a change needs %d on each side", n, historyMinSegment)
			continue
		}
		analysed++
		vals := s.Values[s.From:]
		cps := stats.ChangePoints(vals, alpha, historyMinSegment, changePointSeed)
		for j, cp := range cps {
			lo, hi := 0, len(vals)
			if j > 0 {
				lo = cps[j-1].Index
			}
			if j+1 < len(cps) {
				hi = cps[j+1].Index
			}
			ch := &ChangePoint{Commit: s.Commits[s.From+cp.Index], Index: s.From + cp.Index, Before: stats.Median(vals[lo:cp.Index]), After: stats.Median(vals[cp.Index:hi]), P: cp.P}
			ch.Change = (ch.After - ch.Before) / math.Abs(ch.Before)
			ch.Kind = changeKind(ch.Before, ch.After, better, rule.Tolerance)
			s.Changes = append(s.Changes, ch)
		}
	}
	if analysed == 0 {
		rep.Verdict = Error
		return rep, fmt.Errorf("history: %s: no gated series has %d commits with results, so no change can be told from noise", dir, 2*historyMinSegment)
	}
	rep.Verdict = Pass
	for _, s := range rep.Series {
		if n := len(s.Changes); n > 0 && s.Changes[n-1].Kind == changeRegression {
			rep.Verdict = Fail
		}
	}
	return rep, nil
}

// scenarioSHAKey is the file configuration key of the scenario's hash
// (benchtest writes it).
const scenarioSHAKey = "scenario-sha"

// keepNewestVersion drops, from every benchmark's series, the points of
// commits that ran another version of its scenario than the newest
// commit did: results of another scenario file measure something else.
// It returns a note per benchmark cut.
func keepNewestVersion(values map[seriesKey]map[int][]float64, shas map[string]map[int]string) []string {
	var notes []string
	for _, bench := range slices.Sorted(maps.Keys(shas)) {
		byCommit := shas[bench]
		newest := slices.Max(slices.Collect(maps.Keys(byCommit)))
		want := byCommit[newest]
		var dropped []int
		for i, sha := range byCommit {
			if sha != want {
				dropped = append(dropped, i)
			}
		}
		if len(dropped) == 0 {
			continue
		}
		for k, m := range values {
			if k.bench == bench {
				for _, i := range dropped {
					delete(m, i)
				}
			}
		}
		notes = append(notes, fmt.Sprintf("%s: %d commit(s) ran another version of the scenario than the newest (scenario-sha %s); left out", bench, len(dropped), shortSHA(want)))
	}
	return notes
}

func shortSHA(s string) string {
	if s == "" {
		return "(none)"
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// changeKind judges a shift from before to after against a tolerance in
// the unit's bad direction (better: +1 higher is better, -1 lower).
func changeKind(before, after float64, better int, tol Tolerance) string {
	allowed := tol.Amount
	if tol.Relative {
		allowed *= math.Abs(before)
	}
	worse := (before - after) * float64(better) // > 0 when after is worse
	switch {
	case better == 0:
		return changeWithin
	case worse > allowed:
		return changeRegression
	case -worse > allowed:
		return changeImprovement
	}
	return changeWithin
}

// ExitCode is 1 when the newest change of a gated series is a
// regression past its tolerance (a persistent shift that main still
// carries), else 0.
func (r *ChangePointReport) ExitCode() int {
	if r.Verdict == Fail {
		return ExitRegression
	}
	return ExitPass
}

// WriteText writes the report for people.
func (r *ChangePointReport) WriteText(w io.Writer) error {
	var b strings.Builder
	first, last := "", ""
	if n := len(r.Commits); n > 0 {
		first, last = r.Commits[0], r.Commits[n-1]
	}
	where := r.Dir
	if r.Runner != "" {
		where += " (runner " + r.Runner + ")"
	}
	fmt.Fprintf(&b, "history: %d commits in %s (%s … %s), E-divisive means, alpha %g, %d permutations, shifts that last %d commits or more\n",
		len(r.Commits), where, first, last, r.Alpha, stats.ChangePermutations, historyMinSegment)
	for _, s := range r.Series {
		fmt.Fprintf(&b, "\n%s  %s (better %s, tolerance %s)\n", s.Benchmark, s.Unit, s.Better, s.Tolerance)
		switch {
		case s.Skipped != "":
			fmt.Fprintf(&b, "  not analysed: %s\n", s.Skipped)
		case len(s.Changes) == 0:
			fmt.Fprintf(&b, "  no persistent shift over %d commits\n", len(s.Values))
		}
		for _, c := range s.Changes {
			fmt.Fprintf(&b, "  shift at %s: %.4g → %.4g (%s, p=%.3f): %s\n", c.Commit, c.Before, c.After, percent(c.Change), c.P, c.Kind)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nnote: %s", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	switch r.Verdict {
	case Fail:
		b.WriteString("\nverdict: FAIL: main still carries a regression (the newest shift of a gated series)\n")
	case Pass:
		b.WriteString("\nverdict: pass: no gated series ends on a regression\n")
	default:
		b.WriteString("\nverdict: cannot tell: too short a history\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func percent(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*f)
}

// WriteMarkdown writes the report as a Markdown table of the shifts.
func (r *ChangePointReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	verdict := map[Verdict]string{
		Pass: "pass: no gated series ends on a regression",
		Fail: "**FAIL**: main still carries a regression",
	}[r.Verdict]
	if verdict == "" {
		verdict = "cannot tell: too short a history"
	}
	fmt.Fprintf(&b, "### servegate history: %s\n\n%d commits, E-divisive means, alpha %g.\n\n", verdict, len(r.Commits), r.Alpha)
	b.WriteString("| benchmark | unit | shift at | before → after | change | p | kind |\n|---|---|---|---|---|---|---|\n")
	for _, s := range r.Series {
		switch {
		case s.Skipped != "":
			fmt.Fprintf(&b, "| %s | %s | not analysed: %s | | | | |\n", s.Benchmark, s.Unit, s.Skipped)
		case len(s.Changes) == 0:
			fmt.Fprintf(&b, "| %s | %s | none | | | | |\n", s.Benchmark, s.Unit)
		}
		for _, c := range s.Changes {
			fmt.Fprintf(&b, "| %s | %s | %s | %.4g → %.4g | %s | %.3f | %s |\n", s.Benchmark, s.Unit, c.Commit, c.Before, c.After, percent(c.Change), c.P, c.Kind)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as JSON.
func (r *ChangePointReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write history report: %w", err)
	}
	return nil
}

// MarshalJSON writes a change that has no ratio (a zero Before) as null.
func (c *ChangePoint) MarshalJSON() ([]byte, error) {
	type plain ChangePoint
	out := struct {
		*plain
		Change *float64 `json:"change"`
	}{plain: (*plain)(c)}
	if !math.IsNaN(c.Change) && !math.IsInf(c.Change, 0) {
		out.Change = &c.Change
	}
	return json.Marshal(out)
}

// Limits of the change-point detector (documented in ci/README.md).
const (
	// historyMinSegment is the fewest points on either side of a change:
	// a shift must persist over this many results to be found.
	historyMinSegment = 3
	// historyMaxPoints bounds a series; each test costs
	// stats.ChangePermutations × n² distance evaluations.
	historyMaxPoints = 500
)
