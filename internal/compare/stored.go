package compare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/store"
)

// ModeStored judges head's runs against main's runs in a results store
// instead of base's (docs/history.md, "The stored baseline").
const ModeStored = "stored"

// DefaultFresh is -mode stored's fresh base runs, made beside head's
// first runs to check the machine's drift since main's runs.
const DefaultFresh = 2

// errFallback asks Run to compare base and head paired instead: the
// stored baseline cannot serve.
type errFallback struct{ why string }

func (e *errFallback) Error() string { return e.why }

// checkStored reports the flags -mode stored needs or does not take.
func (cfg *Config) checkStored() error {
	if cfg.Mode != ModeStored {
		for _, f := range []struct {
			flag string
			set  bool
		}{{"-baseline-store", cfg.Store != ""}, {"-runner", cfg.Runner != ""}, {"-fresh", cfg.Fresh != 0}, {"-no-fallback", cfg.NoFallback}} {
			if f.set {
				return inputErrorf("%s: only with -mode stored", f.flag)
			}
		}
		return nil
	}
	if cfg.Store == "" {
		return inputErrorf("-mode stored: want -baseline-store, the results store of main's runs")
	}
	if max := gate.DefaultSequential().MaxPairs; cfg.Fresh < 0 || cfg.Fresh > max {
		return inputErrorf("-fresh %d: want 1 to %d fresh base runs (0: %d)", cfg.Fresh, max, DefaultFresh)
	}
	for _, f := range []struct {
		flag string
		set  bool
	}{{"-run", cfg.Run != ""}, {"-parallel", cfg.Parallel != 0}, {"-pair-mode", cfg.PairMode != ""},
		{"-base-url", cfg.BaseURL != ""}, {"-head-url", cfg.HeadURL != ""}, {"-count", cfg.Count != 0}} {
		if f.set {
			return inputErrorf("%s: not with -mode stored, which runs every scenario of the packages, one side at a time", f.flag)
		}
	}
	return nil
}

// stored is -mode stored. Fresh base runs alternate with head's first
// runs; then head runs alone, one run of every scenario still open at
// a time, up to the sequential test's cap. After each head run
// gate.JudgeStored judges each open scenario's head runs against main's
// stored runs of base's commit. A baseline that cannot serve (none
// stored, stale, another runner type, a drift) returns *errFallback.
func stored(ctx context.Context, cfg Config, sides []*side, out string, res *Result, log io.Writer) error {
	st, err := store.Open(cfg.Store)
	if err != nil {
		return inputErrorf("-baseline-store: %v", err)
	}
	pol := gate.DefaultPolicy()
	if cfg.Policy != "" {
		if pol, err = gate.LoadPolicy(cfg.Policy); err != nil {
			return inputErrorf("-policy: %v", err)
		}
	}
	runner := cmp.Or(cfg.Runner, os.Getenv("SERVEGATE_RUNNER"), "local")
	fresh := cmp.Or(cfg.Fresh, DefaultFresh)
	limit := gate.DefaultSequential().MaxPairs
	heads, bases := map[Key][]string{}, map[Key][]string{}
	var open []Key
	for k := 1; k <= limit; k++ {
		for _, s := range sides {
			if s.name == "base" && k > fresh {
				continue
			}
			for j, p := range s.pkgs {
				dir := filepath.Join(out, "runs", fmt.Sprintf("%s-%d", s.name, k), fmt.Sprintf("p%d", j+1))
				if err := runWhole(ctx, s.name, k, p, dir, out); err != nil {
					return err
				}
				files, err := filepath.Glob(filepath.Join(dir, "*.bench.1.json"))
				if err != nil {
					return err
				}
				for _, f := range files {
					key := Key{Pkg: p.Rel, Name: strings.TrimSuffix(filepath.Base(f), ".bench.1.json")}
					if s.name == "base" {
						bases[key] = append(bases[key], f)
						continue
					}
					if k == 1 {
						open = append(open, key)
						res.scenario(key)
					}
					heads[key] = append(heads[key], f)
				}
			}
		}
		if k == 1 && len(open) == 0 {
			return inputErrorf("no scenario to compare: head's first run wrote no <scenario>.bench.1.json: the packages' benchmarks run no servegate scenario")
		}
		var still []Key
		for _, key := range open {
			if len(heads[key]) != k || (k <= fresh && len(bases[key]) != k) {
				return inputErrorf("run %d: %s has no result of one side: base and head run different scenarios", k, key)
			}
			var text strings.Builder
			v, err := gate.JudgeStored(gate.StoreInput{
				Store: st,
				Query: gate.BaselineQuery{Runner: runner, Commit: res.Base.Commit},
				Heads: heads[key], Fresh: bases[key],
			}, pol, &text)
			var nb *gate.NoBaselineError
			s := res.scenario(key)
			switch {
			case errors.As(err, &nb):
				return &errFallback{why: fmt.Sprintf("%s: %v", key, err)}
			case err != nil:
				s.Verdict = Verdict{State: CannotJudge, Pairs: k, Reason: err.Error(), Text: text.String()}
			case v.Decision == gate.Continue && k < limit:
				still = append(still, key)
				continue
			default:
				s.Verdict = Verdict{Pairs: v.Pairs, Reason: v.Why + "; " + v.Used, Text: text.String()}
				s.Verdict.State = map[gate.Decision]State{gate.NoRegression: Pass, gate.Regression: Regression}[v.Decision]
				if s.Verdict.State == Continue {
					s.Verdict.State = CannotJudge
				}
			}
			fmt.Fprintf(log, "compare: %s: %s after %d head run(s): %s\n", key, s.Verdict.State, k, s.Verdict.Reason)
		}
		open = still
		if len(open) == 0 {
			break
		}
		fmt.Fprintf(log, "compare: head run %d of at most %d done\n", k, limit)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("stored baseline: head's runs against main's runs of commit %s in %s (runner type %s), %d fresh base run(s) for the drift check; only %s is gated in this mode",
		short(res.Base.Commit), cfg.Store, runner, fresh, "median TTFT"))
	slices.SortFunc(res.Scenarios, func(a, b *ScenarioResult) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	return nil
}
