package gate

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/store"
)

// storeFlags are the flags of the stored baseline (-sequential
// -baseline-store).
type storeFlags struct {
	store, baseCommit, scenarioVersion string
	maxAgeDays                         int
	fresh                              fileList
}

// A fileList is a flag given once per file, in order.
type fileList []string

func (l *fileList) String() string { return strings.Join(*l, " ") }

func (l *fileList) Set(v string) error {
	if v == "" {
		return errors.New("empty file name")
	}
	*l = append(*l, v)
	return nil
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.store, "baseline-store", "", "with -sequential: judge head's runs (the arguments HEAD1 HEAD2 ..., detailed result files in run order) against main's runs in the results store `dir` instead of base's (the stored baseline, docs/verdicts.md)")
	fs.StringVar(&f.baseCommit, "base-commit", "", "with -baseline-store: main's `commit` whose stored runs are the baseline (the pull request's base; full hash as filed); default: the store's newest baseline of the scenario")
	fs.StringVar(&f.scenarioVersion, "scenario-version", "", "with -baseline-store: the scenario-sha head's runs must have ran (default: theirs)")
	fs.IntVar(&f.maxAgeDays, "baseline-max-age", DefaultBaselineMaxAgeDays, fmt.Sprintf("with -baseline-store: the oldest stored runs used, in `days` since they were added, 1 to %d; older is stale", MaxBaselineMaxAgeDays))
	fs.Var(&f.fresh, "fresh-base", "with -baseline-store: a fresh base run's detailed result `file`, made beside the head run of the same position; once per fresh run, in order (at least one: the drift check)")
}

// check refuses store flags without -baseline-store, -baseline-store
// without -sequential, and numbers past their limits.
func (f *storeFlags) check(fs *flag.FlagSet, sequential bool) error {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.store == "" {
		for _, name := range []string{"base-commit", "scenario-version", "baseline-max-age", "fresh-base"} {
			if set[name] {
				return fmt.Errorf("-%s: only with -sequential -baseline-store", name)
			}
		}
		return nil
	}
	if !sequential {
		return errors.New("-baseline-store: only with -sequential (the stored baseline judges p99 TTFT with the sequential test)")
	}
	// internal/gate imports nothing of servegate but internal/store (TestImportsNothingOfServegate),
	// so the documented limit is checked here rather than through internal/limit.
	if f.maxAgeDays < 1 || f.maxAgeDays > MaxBaselineMaxAgeDays {
		return fmt.Errorf("-baseline-max-age %d: want 1 to %d days", f.maxAgeDays, MaxBaselineMaxAgeDays)
	}
	if f.baseCommit != "" {
		if err := store.CheckCommit(f.baseCommit); err != nil {
			return fmt.Errorf("-base-commit: %w", err)
		}
	}
	return nil
}

// input opens the store and gathers what mainStoreSequential judges.
func (f *storeFlags) input(runner string, heads []string) (StoreInput, error) {
	if runner == "" {
		return StoreInput{}, errors.New("-baseline-store: -runner is required: the runner type head ran on (a baseline of another runner type measures another machine)")
	}
	st, err := store.Open(f.store)
	if err != nil {
		return StoreInput{}, fmt.Errorf("-baseline-store: %w", err)
	}
	return StoreInput{
		Store: st,
		Query: BaselineQuery{Runner: runner, Commit: f.baseCommit, ScenarioSHA: f.scenarioVersion,
			MaxAge: time.Duration(f.maxAgeDays) * 24 * time.Hour},
		Heads: heads, Fresh: f.fresh,
	}, nil
}
