package compare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/store"
)

// A Config is one comparison. Its zero value compares the working tree
// of the current directory's module with BASE, once Base is set.
type Config struct {
	// Dir is a directory of the module; "" is the current directory.
	Dir string
	// Base is the base commit; Head the head commit, "" for the working
	// tree.
	Base, Head string
	// Packages are the package patterns searched for scenarios; nil is
	// ./...
	Packages []string
	// Run, when set, compares only the scenarios whose names match it.
	Run string
	// Out is the output directory; "" is out/compare under Dir.
	Out string
	// Policy is the verdict's policy file; "" is the default policy.
	Policy string
	// Parallel is the most scenario processes at once; 0 starts with
	// DefaultParallel and halves it when the typical run of a round is
	// short of CPU.
	Parallel int
	// Prepare, when set, is a shell command run in each side's module
	// root before anything is built.
	Prepare string
	// PairMode is how a pair runs, one of pipeline.PairModes; "" lets
	// each scenario's target kind choose (pipeline.ChoosePairMode).
	PairMode string
	// BaseURL and HeadURL, when set, are servers each side deployed:
	// every scenario runs on a url target there (SERVEGATE_BASE_URL,
	// SERVEGATE_URL).
	BaseURL, HeadURL string
	// Mode is how the runs come to be, one of Modes; "" is ModePaired.
	Mode string
	// Count is ModeInterleaved's runs per side; 0 is DefaultCount.
	Count int
	// Store is ModeStored's results store of main's runs; Runner the
	// runner type head runs on, "" for $SERVEGATE_RUNNER or "local";
	// Fresh the fresh base runs, 0 for DefaultFresh.
	Store, Runner string
	Fresh         int
	// NoFallback makes a stored baseline that cannot serve exit 2
	// rather than compare base and head paired.
	NoFallback bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Judge decides each scenario; nil is the default verdict.
	Judge Judge
}

// DefaultParallel is the number of scenario processes an automatic
// -parallel starts with.
const DefaultParallel = 2

// maxRounds bounds the rounds whatever the verdict asks: a verdict that
// has not ended by then cannot judge.
const maxRounds = 100

// Run runs the comparison and returns its result. An error means no
// verdict: bad input (an *InputError), a side that did not build or
// start, an interrupted run. Its exit status is 2.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	dir, err := filepath.Abs(cmp.Or(cfg.Dir, "."))
	if err != nil {
		return nil, err
	}
	out, err := filepath.Abs(cmp.Or(cfg.Out, filepath.Join(dir, "out", "compare")))
	if err != nil {
		return nil, err
	}
	if err := resetOut(out); err != nil {
		return nil, err
	}
	res := &Result{Base: Side{Ref: cfg.Base}, Head: Side{Ref: cfg.Head}}
	err = run(ctx, cfg, dir, out, res, log)
	if fb := (*errFallback)(nil); errors.As(err, &fb) && cfg.NoFallback {
		err = inputErrorf("the stored baseline cannot serve: %s (-no-fallback)", fb.why)
		res.Err = err.Error()
	} else if errors.As(err, &fb) {
		// The stored baseline cannot serve: base and head run paired,
		// and that verdict is the comparison's.
		fallback := filepath.Join(out, "fallback")
		fmt.Fprintf(log, "compare: the stored baseline cannot serve: %s; comparing base and head paired instead, in %s\n", fb.why, fallback)
		f := cfg
		f.Mode, f.Store, f.Runner, f.Fresh, f.Out = "", "", "", 0, fallback
		res, err = Run(ctx, f)
		if res == nil {
			return nil, err
		}
		res.Notes = append([]string{"the stored baseline could not serve (" + fb.why + "): base and head ran paired instead"}, res.Notes...)
	}
	if err != nil && ctx.Err() != nil {
		// A signal (or the caller) stopped the comparison: say so, and
		// where the pairs it ran are, rather than "context canceled".
		err = fmt.Errorf("interrupted before a verdict (%w): the pairs run so far are reported here and kept in %s; run the comparison again", ctx.Err(), out)
	}
	if err != nil {
		// The reports say why there is no verdict, for the job summary
		// and the pull request comment.
		res.Err = err.Error()
	}
	if werr := res.write(out); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

// run is Run once the output directory is ready.
func run(ctx context.Context, cfg Config, dir, out string, res *Result, log io.Writer) error {
	root, err := moduleRoot(ctx, dir)
	if err != nil {
		return err
	}
	rp, err := findRepo(ctx, root)
	if err != nil {
		return err
	}
	if res.Base.Commit, err = rp.commit(ctx, "BASE", cfg.Base); err != nil {
		return err
	}
	if cfg.Head != "" {
		if res.Head.Commit, err = rp.commit(ctx, "HEAD", cfg.Head); err != nil {
			return err
		}
	} else if res.Head.Commit, err = command(ctx, rp.root, nil, "git", "rev-parse", "HEAD"); err != nil {
		return fmt.Errorf("the working tree's commit: %w", err)
	}

	tmp, err := os.MkdirTemp("", "servegate-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	baseTree, removeBase, err := rp.worktree(ctx, tmp, "base", res.Base.Commit)
	defer removeBase()
	if err != nil {
		return err
	}
	headRoot := root
	if cfg.Head != "" {
		headTree, removeHead, err := rp.worktree(ctx, tmp, "head", res.Head.Commit)
		defer removeHead()
		if err != nil {
			return err
		}
		headRoot = filepath.Join(headTree, rp.rel)
	}
	baseRoot := filepath.Join(baseTree, rp.rel)
	fmt.Fprintf(log, "compare: %s\n", res.header())

	if err := versions(ctx, res, headRoot, baseRoot); err != nil {
		return err
	}
	if cfg.Prepare != "" {
		for _, r := range []string{baseRoot, headRoot} {
			if err := prepare(ctx, r, cfg.Prepare, log); err != nil {
				return err
			}
		}
	}
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return err
	}
	if cfg.Mode == ModeInterleaved || cfg.Mode == ModeStored {
		sides, err := buildSides(ctx, cfg, baseRoot, headRoot, bin, log)
		if err != nil {
			return err
		}
		if cfg.Mode == ModeStored {
			return stored(ctx, cfg, sides, out, res, log)
		}
		return interleave(ctx, cfg, sides, out, res, log)
	}
	pkgs, err := findPackages(ctx, headRoot, cmpOr(cfg.Packages, []string{"./..."}))
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "compare: building the tests of %d package(s) from head\n", len(pkgs))
	if err := buildTests(ctx, headRoot, bin, pkgs); err != nil {
		return err
	}
	judge := cfg.Judge
	if judge == nil {
		if judge, err = newFastJudge(cfg.Policy); err != nil {
			return err
		}
	}
	src := &binaries{
		pkgs: pkgs,
		env: append(os.Environ(),
			pipeline.EnvPairedBase+"="+baseRoot,
			pipeline.EnvPairedHead+"="+headRoot),
		runs:     filepath.Join(out, "runs"),
		parallel: cmp.Or(cfg.Parallel, DefaultParallel),
		auto:     cfg.Parallel == 0,
		log:      log,
		seconds:  map[Key]float64{},
		alone:    map[Key]bool{},
	}
	if cfg.PairMode != "" {
		src.env = append(src.env, pipeline.EnvPairMode+"="+cfg.PairMode)
	}
	if cfg.BaseURL != "" {
		src.env = append(src.env, pipeline.EnvBaseURL+"="+cfg.BaseURL)
	}
	if cfg.HeadURL != "" {
		src.env = append(src.env, scenario.EnvURL+"="+cfg.HeadURL)
	}
	return compare(ctx, cfg, src, judge, res, out, log)
}

// check reports a configuration that cannot run.
func (cfg *Config) check() error {
	if cfg.Base == "" {
		return inputErrorf("want BASE, the commit to compare with")
	}
	if cfg.Mode != "" && !slices.Contains(Modes, cfg.Mode) {
		return inputErrorf("-mode %s: want one of %s", cfg.Mode, strings.Join(Modes, ", "))
	}
	if err := cfg.checkInterleaved(); err != nil {
		return err
	}
	if err := cfg.checkStored(); err != nil {
		return err
	}
	if cfg.Parallel < 0 {
		return inputErrorf("-parallel %d: want 0 (by the harness's health) or more", cfg.Parallel)
	}
	if _, err := regexp.Compile(cfg.Run); err != nil {
		return inputErrorf("-run: %v", err)
	}
	if cfg.PairMode != "" && !slices.Contains(pipeline.PairModes, cfg.PairMode) {
		return inputErrorf("-pair-mode %s: want one of %s", cfg.PairMode, strings.Join(pipeline.PairModes, ", "))
	}
	for _, u := range []struct{ flag, url string }{{"-base-url", cfg.BaseURL}, {"-head-url", cfg.HeadURL}} {
		if p, err := url.Parse(u.url); u.url != "" && (err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "") {
			return inputErrorf("%s %s: want http://host:port", u.flag, redact.String(u.url))
		}
	}
	if cfg.BaseURL != "" && strings.TrimRight(cfg.BaseURL, "/") == strings.TrimRight(cfg.HeadURL, "/") {
		return inputErrorf("-base-url and -head-url are both %s, one server: deploy base and head each, and give each side's URL", redact.String(cfg.BaseURL))
	}
	return nil
}

func orWorkingTree(ref string) string {
	if ref == "" {
		return "the working tree"
	}
	return ref
}

func cmpOr(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

// versions reads servegate's version on each side and applies the rule
// of checkVersions.
func versions(ctx context.Context, res *Result, headRoot, baseRoot string) error {
	head, ok, err := servegateVersion(ctx, headRoot)
	if err != nil {
		return err
	}
	if !ok {
		return inputErrorf("%s does not require %s: go get -tool %s/cmd/servegate", filepath.Join(headRoot, "go.mod"), Module, Module)
	}
	base, baseOK := Version{}, false
	if _, err := os.Stat(filepath.Join(baseRoot, "go.mod")); err == nil {
		if base, baseOK, err = servegateVersion(ctx, baseRoot); err != nil {
			return err
		}
	}
	tool, _ := running()
	note, err := checkVersions(tool, head, base, baseOK)
	if err != nil {
		return err
	}
	res.Base.Servegate, res.Head.Servegate = base, head
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	return nil
}

// prepare runs the -prepare command in a side's module root.
func prepare(ctx context.Context, root, command string, log io.Writer) error {
	fmt.Fprintf(log, "compare: prepare in %s: %s\n", root, command)
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = root
	tail := &tailWriter{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, tail), io.MultiWriter(log, tail)
	if err := cmd.Run(); err != nil {
		return inputErrorf("-prepare in %s: %v:\n%s", root, err, tail.String())
	}
	return nil
}

// resetOut empties the files of an earlier comparison in out.
func resetOut(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	for _, f := range []string{"gate.md", "gate.json", "gate.txt", "base.benchfmt", "head.benchfmt", "base.txt", "head.txt"} {
		if err := os.Remove(filepath.Join(out, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.RemoveAll(filepath.Join(out, "runs")); err != nil {
		return err
	}
	return os.MkdirAll(filepath.Join(out, "runs"), 0o755)
}

// compare checks every scenario's pairing, then runs rounds of pairs
// until every scenario's verdict has ended.
func compare(ctx context.Context, cfg Config, src Source, judge Judge, res *Result, out string, log io.Writer) error {
	checked, err := src.Check(ctx)
	if err != nil {
		return err
	}
	filter := regexp.MustCompile(cfg.Run)
	var open []Key
	var bad []error
	for _, r := range checked {
		if !filter.MatchString(r.Scenario) {
			continue
		}
		s := &ScenarioResult{Key: r.Key, TargetDiff: r.TargetDiff, TargetChanges: r.TargetChanges}
		switch p := r.Problem; {
		case p == nil:
			open = append(open, r.Key)
		case p.Kind == pipeline.ProblemNew || p.Kind == pipeline.ProblemSkipped:
			s.NotJudged = p.Message
		default:
			bad = append(bad, errors.New(p.Message))
		}
		res.Scenarios = append(res.Scenarios, s)
	}
	if len(bad) > 0 {
		return &InputError{Err: errors.Join(bad...)}
	}
	if len(open) == 0 {
		return nothingToCompare(checked, cfg.Run)
	}
	if sj, ok := judge.(suiteJudge); ok {
		if note := sj.judging(len(open)); note != "" {
			res.Notes = append(res.Notes, note)
		}
	}
	history := map[Key][]*Record{}
	for n := 1; len(open) > 0; {
		recs, err := src.Round(ctx, n, open)
		if err != nil {
			return err
		}
		if err := addBenchfmt(out, recs); err != nil {
			return err
		}
		next := n + 1
		var still []Key
		for _, k := range open {
			s := res.scenario(k)
			for _, r := range recordsOf(recs, k) {
				if r.Pair < n {
					return fmt.Errorf("compare: pair %d of %s has the label %d", n, k, r.Pair)
				}
				next = max(next, r.Pair+1)
				if s.Verdict.State != Continue && len(history[k]) > 0 {
					// A pair run ahead of a verdict that ended before it.
					fmt.Fprintf(log, "compare: %s: pair %d ran ahead and was not needed\n", k, r.Pair)
					continue
				}
				if p := r.Problem; p != nil {
					return inputErrorf("pair %d of %s: %s", r.Pair, k, p.Message)
				}
				s.BaseImage, s.HeadImage, s.Mode = r.Base.Image, r.Head.Image, r.Mode
				s.Headroom = max(s.Headroom, r.Base.Headroom, r.Head.Headroom)
				res.noteNotReset(k, r)
				history[k] = append(history[k], r)
				s.Verdict = judgeRound(judge, k, history[k], r.Pair)
			}
			if s.Verdict.State == Continue {
				still = append(still, k)
				continue
			}
			fmt.Fprintf(log, "compare: %s: %s after %d pair(s): %s\n", k, s.Verdict.State, s.Verdict.Pairs, s.Verdict.Reason)
		}
		open, n = still, next
	}
	return nil
}

// judgeRound judges a scenario's pairs after round n. A pair with an
// invalid run ends the verdict: the numbers of a load generator that
// fell behind say nothing about the server.
func judgeRound(judge Judge, k Key, pairs []*Record, n int) Verdict {
	last := pairs[len(pairs)-1]
	for _, s := range []struct {
		side string
		pipeline.PairSide
	}{{"base", last.Base}, {"head", last.Head}} {
		if s.Invalid != "" {
			return Verdict{State: CannotJudge, Pairs: len(pairs),
				Reason: fmt.Sprintf("pair %d: %s: %s (after its reruns)", n, s.side, store.Refusal(false, s.Invalid))}
		}
	}
	v, err := judge.Judge(k.Name, pairs)
	if err != nil {
		// A pair the verdict cannot read ends this scenario, not the
		// others: a regression elsewhere is still exit 1.
		return Verdict{State: CannotJudge, Pairs: len(pairs), Reason: err.Error()}
	}
	if v.State == Continue && n >= maxRounds {
		v.State = CannotJudge
		v.Reason = fmt.Sprintf("the verdict did not end after %d pairs: %s", n, v.Reason)
	}
	return v
}

// recordsOf returns k's records of a round, in the order of their pairs.
func recordsOf(recs []*Record, k Key) []*Record {
	var rs []*Record
	for _, r := range recs {
		if r.Key == k {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		// Source.Round returns a record of every open scenario.
		panic(fmt.Sprintf("compare: no record of %s", k))
	}
	slices.SortStableFunc(rs, func(a, b *Record) int { return a.Pair - b.Pair })
	return rs
}

// nothingToCompare says why no scenario can be compared.
func nothingToCompare(checked []*Record, run string) error {
	if len(checked) == 0 {
		return inputErrorf("no scenario to compare: the packages' benchmarks run no servegate scenario (benchtest.BenchDir or Bench)")
	}
	if run != "" {
		return inputErrorf("no scenario to compare: none that pairs matches -run %q", run)
	}
	var why []string
	for _, r := range checked {
		why = append(why, r.Problem.Message)
	}
	slices.Sort(why)
	return inputErrorf("no scenario to compare:\n%s", strings.Join(why, "\n"))
}
