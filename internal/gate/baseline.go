package gate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/servegate/servegate/internal/store"
)

// Limits of a stored baseline's age (-baseline-max-age, in days).
const (
	// DefaultBaselineMaxAgeDays is how old, in days since main's runs
	// were added to the store, a baseline may be by default: a runner
	// type's machine image changes every few weeks, and a baseline
	// measured on last month's image describes another machine.
	DefaultBaselineMaxAgeDays = 30
	// MaxBaselineMaxAgeDays is the largest -baseline-max-age.
	MaxBaselineMaxAgeDays = 365
)

// CheckBaseline finds and checks the stored baselines a head can be
// compared against (docs/history.md, "The stored baseline"): for each of
// head's benchmarks (full name to the scenario-sha of head's result
// lines), the baseline commit Store.Baselines gives on the runner type
// runner. It fails closed: every benchmark that cannot be judged against
// its baseline is an error, and the errors are joined, one line each,
// naming the benchmark and what to do:
//
//   - the store holds no run of this runner type (a baseline of another
//     runner type measures another machine: re-measure base on this one);
//   - the benchmark has no baseline on this runner type;
//   - the baseline ran another version of the scenario (its
//     scenario-sha differs from head's);
//   - the baseline commit has invalid or interrupted result lines;
//   - it has fewer valid result lines than need, the runs the test needs.
//
// A head line without a scenario-sha cannot be matched to a version and
// is an error too. On success it returns the baseline commit of each of
// head's benchmarks.
func CheckBaseline(st *store.Store, runner string, head map[string]string, need int) (map[string]*store.Commit, error) {
	if len(head) == 0 {
		return nil, errors.New("baseline: head has no benchmark to compare")
	}
	if err := checkRunnerInStore(st, runner); err != nil {
		return nil, err
	}
	bases, err := st.Baselines(runner)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	names := make([]string, 0, len(head))
	for name := range head {
		names = append(names, name)
	}
	sort.Strings(names)
	out := map[string]*store.Commit{}
	var errs []error
	for _, name := range names {
		c, ok := bases[name]
		if !ok {
			errs = append(errs, fmt.Errorf("baseline: %s: no baseline on runner type %s: main has no valid run of it there yet", name, runner))
			continue
		}
		if err := checkBaselineBenchmark(c, name, head[name], need); err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = c
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// checkRunnerInStore fails when the store holds no run of runner: a
// baseline of another runner type measures another machine.
func checkRunnerInStore(st *store.Store, runner string) error {
	if err := store.CheckRunner(runner); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	runners, err := st.Runners()
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if !slices.Contains(runners, runner) {
		others := "none"
		if len(runners) > 0 {
			others = strings.Join(runners, ", ")
		}
		return fmt.Errorf("baseline: the store %s has no runs of runner type %s (it has: %s); a baseline from another runner type measures another machine: run base on %s instead (servegate compare)", st.Dir, runner, others, runner)
	}
	return nil
}

// checkBaselineBenchmark checks what commit c holds of benchmark name
// against head's scenario version sha and the need of the test.
func checkBaselineBenchmark(c *store.Commit, name, sha string, need int) error {
	b := c.Benchmarks()[name]
	switch {
	case sha == "":
		return fmt.Errorf("baseline: %s: head's result lines carry no scenario-sha, so the scenario version cannot be matched to the baseline's", name)
	case b.ScenarioSHA != sha:
		return fmt.Errorf("baseline: %s: the baseline (commit %s) ran another version of the scenario (scenario-sha %s, head's %s): its figures do not measure the same thing; run base and head paired instead", name, c.ID, shortSHA(b.ScenarioSHA), shortSHA(sha))
	case b.Refused > 0:
		return fmt.Errorf("baseline: %s: the baseline (commit %s) has %d invalid or interrupted result line(s) beside %d valid: a baseline with invalid runs is not used", name, c.ID, b.Refused, b.Valid)
	case b.Valid < need:
		return fmt.Errorf("baseline: %s: the baseline (commit %s) has %d valid run(s), the test needs %d", name, c.ID, b.Valid, need)
	}
	return nil
}

// A BaselineQuery asks the store for the stored baseline of one
// scenario: main's stored runs that head's runs are compared against.
type BaselineQuery struct {
	// Runner is the runner type head runs on.
	Runner string
	// Scenario is the scenario's name (the result JSON's "scenario", the
	// benchmark's scenario= part); ScenarioSHA the scenario version head
	// ran (its "scenario-sha").
	Scenario, ScenarioSHA string
	// Commit, when set, is the commit of main whose runs are the
	// baseline (the pull request's base): the baseline must be exactly
	// that commit's runs. Empty: the store's newest baseline of the
	// benchmark (Store.Baselines).
	Commit string
	// Need is the fewest stored runs the test needs.
	Need int
	// MaxAge is how long ago main's runs may have been added; past it
	// the baseline is stale. 0 means DefaultBaselineMaxAgeDays.
	MaxAge time.Duration
	// Now is the time the age is measured at; zero means time.Now.
	Now time.Time
}

// A Baseline is the stored baseline of one scenario.
type Baseline struct {
	// Commit is main's commit whose runs are the baseline; Benchmark the
	// benchmark's full name in the store.
	Commit    *store.Commit
	Benchmark string
	// Added is when the oldest of the runs was added to the store.
	Added time.Time
	// Runs are the detailed result files of the scenario, in the order
	// they were added (and, within an add, by run number).
	Runs []StoredRun
}

// A StoredRun is one of main's detailed result files in the store (read
// when judged, not held).
type StoredRun struct {
	Path string
	run  *store.Run
	name string
}

// Read reads the stored run's file, checked against its run's manifest:
// an altered or torn file is an error naming the run and the file.
func (s StoredRun) Read() ([]byte, error) {
	if s.run == nil {
		return readBounded(s.Path)
	}
	return s.run.ReadFile(s.name)
}

// FindBaseline finds and checks the stored baseline of q's scenario. It
// fails closed, one error naming the reason and what to do, when:
//
//   - the store holds no run of q.Runner (another runner type only);
//   - the baseline is missing: no stored benchmark of the scenario on
//     this runner type, or q.Commit is not in the store;
//   - it is stale: its runs were added more than q.MaxAge ago;
//   - it ran another version of the scenario (scenario-sha);
//   - it has invalid or interrupted runs (result lines or result JSON);
//   - it has fewer valid runs, or detailed result files, than q.Need.
func FindBaseline(st *store.Store, q BaselineQuery) (*Baseline, error) {
	if q.Scenario == "" {
		return nil, errors.New("baseline: head's result files name no scenario (no \"scenario\" key): they cannot be matched to a stored baseline")
	}
	if err := checkRunnerInStore(st, q.Runner); err != nil {
		return nil, err
	}
	var c *store.Commit
	var names []string
	if q.Commit == "" {
		bases, err := st.Baselines(q.Runner)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		for name := range bases {
			names = append(names, name)
		}
		name, err := benchmarkOf(names, q.Scenario, q.Runner)
		if err != nil {
			return nil, err
		}
		c, names = bases[name], []string{name}
	} else {
		commits, _, err := st.Commits(q.Runner)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		for _, k := range commits {
			if k.ID == q.Commit {
				c = k
			}
		}
		if c == nil {
			newest := "none"
			if len(commits) > 0 {
				newest = commits[len(commits)-1].ID
			}
			return nil, fmt.Errorf("baseline: missing: main's commit %s (the pull request's base) has no runs in the store %s on runner type %s (newest stored commit: %s): its runs are not filed yet, or were pruned; compare base and head paired instead", q.Commit, st.Dir, q.Runner, newest)
		}
		for name := range c.Benchmarks() {
			names = append(names, name)
		}
	}
	name, err := benchmarkOf(names, q.Scenario, q.Runner)
	if err != nil {
		return nil, err
	}
	if err := checkBaselineBenchmark(c, name, q.ScenarioSHA, q.Need); err != nil {
		return nil, err
	}
	b := &Baseline{Commit: c, Benchmark: name}
	for _, r := range c.Runs {
		if _, ok := r.Manifest.Benchmarks[name]; ok && (b.Added.IsZero() || r.Manifest.Added.Before(b.Added)) {
			b.Added = r.Manifest.Added
		}
	}
	maxAge, now := q.MaxAge, q.Now
	if maxAge == 0 {
		maxAge = DefaultBaselineMaxAgeDays * 24 * time.Hour
	}
	if now.IsZero() {
		now = time.Now()
	}
	if age := now.Sub(b.Added); age > maxAge {
		return nil, fmt.Errorf("baseline: %s: stale: main's runs (commit %s) were added %s, %.1f days ago, past the limit of %.0f days (-baseline-max-age): the runner type's machine may have changed since; compare base and head paired instead",
			name, c.ID, b.Added.Format(time.RFC3339), age.Hours()/24, maxAge.Hours()/24)
	}
	if b.Runs, err = storedRuns(c, q.Scenario, q.ScenarioSHA); err != nil {
		return nil, err
	}
	if len(b.Runs) < q.Need {
		return nil, fmt.Errorf("baseline: %s: the baseline (commit %s) has %d detailed result file(s) of the scenario, the test needs %d: file main's result JSON with its benchfmt (servegate history add ... out/*.json)", name, c.ID, len(b.Runs), q.Need)
	}
	return b, nil
}

// benchmarkOf picks the one benchmark of names that measures scenario:
// its "scenario=" name part, with or without the GOMAXPROCS suffix, is
// the scenario's name.
func benchmarkOf(names []string, scenario, runner string) (string, error) {
	var found []string
	for _, name := range names {
		_, parts := benchfmt.Name(name).Parts()
		for i, p := range parts {
			v, ok := bytes.CutPrefix(p, []byte("/scenario="))
			if !ok {
				continue
			}
			// A GOMAXPROCS suffix is split off as the last part; a
			// scenario whose own name ends in -<digits> is split too.
			if string(v) == scenario || (i == len(parts)-2 && string(v)+string(parts[i+1]) == scenario) {
				found = append(found, name)
			}
		}
	}
	sort.Strings(found)
	switch len(found) {
	case 0:
		return "", fmt.Errorf("baseline: missing: scenario %s has no baseline on runner type %s: main has no valid run of it there yet; compare base and head paired instead", scenario, runner)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("baseline: scenario %s: %d stored benchmarks measure it (%s): the baseline is ambiguous", scenario, len(found), strings.Join(found, ", "))
}

// resultIdentity is what a detailed result file says of the run it
// holds: its scenario, the scenario's version, and whether the run is
// valid.
type resultIdentity struct {
	Scenario    string  `json:"scenario"`
	ScenarioSHA string  `json:"scenario-sha"`
	Interrupted bool    `json:"interrupted"`
	Invalid     *string `json:"invalid"`
}

// refused says why a run's figures cannot be used ("" when they can).
func (r resultIdentity) refused() string {
	invalid := ""
	if r.Invalid != nil {
		invalid = *r.Invalid
	}
	return store.Refusal(r.Interrupted, invalid)
}

// storedRuns reads commit c's detailed result files of scenario, in the
// order their runs were added and, within a run, by run number (the
// <scenario>.<mode>.<n>.json name). A file of the scenario at another
// version, or of an interrupted or invalid run, fails the baseline.
func storedRuns(c *store.Commit, scenario, sha string) ([]StoredRun, error) {
	var out []StoredRun
	for _, r := range c.Runs {
		files := r.FilesOf(store.KindResult)
		slices.SortStableFunc(files, func(a, b string) int { return compareRunFiles(a, b) })
		for _, f := range files {
			stored := StoredRun{Path: f, run: r, name: filepath.Base(f)}
			data, err := stored.Read()
			if err != nil {
				return nil, fmt.Errorf("baseline: %w", err)
			}
			var id resultIdentity
			if err := decodeResultIdentity(data, &id); err != nil {
				return nil, fmt.Errorf("baseline: %s: %w", f, err)
			}
			if id.Scenario != scenario {
				continue
			}
			if id.ScenarioSHA != sha {
				return nil, fmt.Errorf("baseline: %s: the stored run ran another version of scenario %s (scenario-sha %s, head's %s)", f, scenario, shortSHA(id.ScenarioSHA), shortSHA(sha))
			}
			if why := id.refused(); why != "" {
				return nil, fmt.Errorf("baseline: %s: a stored run of the baseline (commit %s): %s: a baseline with invalid runs is not used", f, c.ID, why)
			}
			out = append(out, stored)
		}
	}
	return out, nil
}

// compareRunFiles orders <name>.<mode>.<n>.json files by name, then run
// number n, so that run 10 follows run 9.
func compareRunFiles(a, b string) int {
	pa, na := splitRunNumber(a)
	pb, nb := splitRunNumber(b)
	if c := strings.Compare(pa, pb); c != 0 {
		return c
	}
	if na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

// splitRunNumber splits "x/chat.bench.12.json" into "x/chat.bench" and
// 12; a name without a run number gives -1.
func splitRunNumber(path string) (string, int) {
	stem := strings.TrimSuffix(path, ".json")
	i := strings.LastIndexByte(stem, '.')
	n := 0
	if i < 0 || i == len(stem)-1 {
		return stem, -1
	}
	for _, c := range stem[i+1:] {
		if c < '0' || c > '9' || n > math.MaxInt32/10 {
			return stem, -1
		}
		n = 10*n + int(c-'0')
	}
	return stem[:i], n
}
