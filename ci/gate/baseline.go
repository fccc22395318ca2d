package gate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/servegate/servegate/ci/history"
)

// CheckBaseline finds and checks the history baselines a head can be
// compared against (issue 27, "a baseline from history"): for each of
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
func CheckBaseline(st *history.Store, runner string, head map[string]string, need int) (map[string]*history.Commit, error) {
	if len(head) == 0 {
		return nil, errors.New("baseline: head has no benchmark to compare")
	}
	if err := history.CheckRunner(runner); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	runners, err := st.Runners()
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	found := false
	for _, r := range runners {
		found = found || r == runner
	}
	if !found {
		others := "none"
		if len(runners) > 0 {
			others = strings.Join(runners, ", ")
		}
		return nil, fmt.Errorf("baseline: the store %s has no runs of runner type %s (it has: %s); a baseline from another runner type measures another machine: run base on %s instead (ci/compare.sh --paired)", st.Dir, runner, others, runner)
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
	out := map[string]*history.Commit{}
	var errs []error
	for _, name := range names {
		sha := head[name]
		c, ok := bases[name]
		if !ok {
			errs = append(errs, fmt.Errorf("baseline: %s: no baseline on runner type %s: main has no valid run of it there yet", name, runner))
			continue
		}
		b := c.Benchmarks()[name]
		switch {
		case sha == "":
			errs = append(errs, fmt.Errorf("baseline: %s: head's result lines carry no scenario-sha, so the scenario version cannot be matched to the baseline's", name))
		case b.ScenarioSHA != sha:
			errs = append(errs, fmt.Errorf("baseline: %s: the baseline (commit %s) ran another version of the scenario (scenario-sha %s, head's %s): its figures do not measure the same thing; run base and head paired instead", name, c.ID, shortSHA(b.ScenarioSHA), shortSHA(sha)))
		case b.Refused > 0:
			errs = append(errs, fmt.Errorf("baseline: %s: the baseline (commit %s) has %d invalid or interrupted result line(s) beside %d valid: a baseline with invalid runs is not used", name, c.ID, b.Refused, b.Valid))
		case b.Valid < need:
			errs = append(errs, fmt.Errorf("baseline: %s: the baseline (commit %s) has %d valid run(s), the test needs %d", name, c.ID, b.Valid, need))
		default:
			out[name] = c
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
