package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/simulator"
	"github.com/servegate/servegate/internal/redact"
)

// Paired mode is how `servegate compare` measures a pull request. With
// SERVEGATE_PAIRED_BASE set, Bench runs every scenario against two
// targets: head's, started as the scenario says, and base's, started
// from the scenario file of the same path in the base checkout. One
// harness process, head's test binary, drives both with one plan: the
// same requests and the same arrival schedule. The machine's noise at
// that moment falls on both runs of a pair.
//
// Each side's target comes from its own checkout: a container target's
// image, build context, args and env, a sim target's profile file, a
// vllm target's image, model and serve flags. A url target is a server
// someone else deployed: head's is SERVEGATE_URL (or the file's
// target.url), base's is EnvBaseURL. The simulator image is the one of
// the servegate sources the test builds with, on both sides; when the
// base checkout is servegate itself, base's simulator is built from it.
// An inproc target does not pair: it runs in the test's own process.
//
// Each side is its own server start, even when both specs are equal:
// an A/A comparison measures two starts, as every real one does.
const (
	// EnvPairedBase is the base checkout's module root.
	EnvPairedBase = "SERVEGATE_PAIRED_BASE"
	// EnvPairedHead is the head checkout's module root, against which
	// a scenario file's path is taken to find base's.
	EnvPairedHead = "SERVEGATE_PAIRED_HEAD"
	// EnvPair is the pair label (a positive integer, default 1), written
	// as pair: on both runs. Base starts first when it is odd.
	EnvPair = "SERVEGATE_PAIR"
	// EnvPairMode says how a pair runs, one of PairModes; unset, the
	// targets' kinds choose (ChoosePairMode).
	EnvPairMode = "SERVEGATE_PAIR_MODE"
	// EnvBaseURL is base's server of a url target, head's being
	// SERVEGATE_URL or the file's target.url.
	EnvBaseURL = "SERVEGATE_BASE_URL"
	// EnvPairCheck, set to 1, makes each scenario check that it pairs
	// and write its record without starting a target.
	EnvPairCheck = "SERVEGATE_PAIR_CHECK"
)

// PairCheck reports whether this process only checks its pairs.
func PairCheck() bool { return os.Getenv(EnvPairCheck) == "1" }

// The pair modes.
const (
	// PairTogether runs base and head at the same time: the machine's
	// noise of that moment falls on both. For servers that fit on the
	// machine side by side: the simulator, small containers, two
	// deployments elsewhere (url).
	PairTogether = "together"
	// PairAlternate runs base and head in turn, each server started
	// just before its run and stopped after it, so that they never
	// share a CPU or a GPU. Odd pairs run base first, even pairs head
	// first: base, head, head, base. For vllm targets and any target
	// that asks for GPUs.
	PairAlternate = "alternate"
)

// PairModes lists the pair modes EnvPairMode accepts.
var PairModes = []string{PairTogether, PairAlternate}

// Paired reports whether this process runs in paired mode.
func Paired() bool { return os.Getenv(EnvPairedBase) != "" }

// PairLabel returns EnvPair, 1 when unset.
func PairLabel() (int, error) {
	v := os.Getenv(EnvPair)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", EnvPair, v)
	}
	return n, nil
}

// PairMode returns EnvPairMode, "" when unset: ChoosePairMode decides.
func PairMode() (string, error) {
	v := os.Getenv(EnvPairMode)
	if v == "" {
		return "", nil
	}
	for _, m := range PairModes {
		if v == m {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s=%q: want one of %s", EnvPairMode, v, strings.Join(PairModes, ", "))
}

// ChoosePairMode returns mode when set, else the mode the targets'
// kinds call for: PairAlternate when either side is a vllm target or
// asks for GPUs, two servers that would fight for the same CPU cores or
// GPU; PairTogether otherwise.
func ChoosePairMode(mode string, base, head scenario.Target) string {
	if mode != "" {
		return mode
	}
	for _, t := range []scenario.Target{base, head} {
		if t.Kind == scenario.TargetVLLM || !t.GPUs.None() {
			return PairAlternate
		}
	}
	return PairTogether
}

// ErrNewInHead says that base has no scenario of that name: it is new
// in head, so there is nothing to compare it with.
var ErrNewInHead = errors.New("new in head")

// BaseScenario loads the base side's scenario of sc: the scenario of
// the same name in the file of the same path under the base checkout,
// with the same environment overrides. A scenario that base lacks is
// ErrNewInHead.
func BaseScenario(sc *scenario.Scenario) (*scenario.Scenario, error) {
	baseRoot, headRoot := os.Getenv(EnvPairedBase), os.Getenv(EnvPairedHead)
	if headRoot == "" {
		return nil, fmt.Errorf("paired mode: %s is set but %s (the head checkout's root) is not", EnvPairedBase, EnvPairedHead)
	}
	if sc.File == "" {
		return nil, fmt.Errorf("paired mode: scenario %s has no file, so base's cannot be found", sc.Name)
	}
	rel, err := relTo(headRoot, sc.File)
	if err != nil {
		return nil, fmt.Errorf("paired mode: scenario file %s is not under %s=%s", sc.File, EnvPairedHead, headRoot)
	}
	file := filepath.Join(baseRoot, rel)
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("paired mode: base has no %s: %w", rel, ErrNewInHead)
	}
	scs, err := scenario.LoadFile(file)
	if err != nil {
		return nil, fmt.Errorf("paired mode: base's scenario %s: %w", sc.Name, err)
	}
	env := scenario.EnvFromOS()
	if u := os.Getenv(EnvBaseURL); u != "" {
		env.URL = u
	}
	for _, b := range scs {
		if b.Name == sc.Name {
			bsc, err := b.Override(env)
			if err != nil {
				return nil, fmt.Errorf("paired mode: base's %w", err)
			}
			return bsc, nil
		}
	}
	return nil, fmt.Errorf("paired mode: base's %s has no scenario %s: %w", rel, sc.Name, ErrNewInHead)
}

// relTo returns path relative to root, refusing a path outside it.
func relTo(root, path string) (string, error) {
	r, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(r, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s is not under %s", path, root)
	}
	return rel, nil
}

// An IdentityError says that base's and head's scenario of one name
// send different workloads, so their runs do not pair.
type IdentityError struct {
	Scenario string
	// Keys are the top-level keys that differ (dataset, load, ...).
	Keys []string
	// Base and Head are where each side's scenario starts (file:line).
	Base, Head string
}

func (e *IdentityError) Error() string {
	verb := "differs"
	if len(e.Keys) > 1 {
		verb = "differ"
	}
	return fmt.Sprintf("scenario %s: its %s %s between base (%s) and head (%s): a comparison pairs one workload on both sides, only the target may differ",
		e.Scenario, strings.Join(e.Keys, ", "), verb, e.Base, e.Head)
}

// CheckIdentity returns an *IdentityError when base's and head's
// scenario send different workloads.
func CheckIdentity(base, head *scenario.Scenario) error {
	if base.Workload == head.Workload {
		return nil
	}
	keys := scenario.WorkloadDiff(base, head)
	if len(keys) == 0 {
		keys = []string{"workload"}
	}
	return &IdentityError{Scenario: head.Name, Keys: keys,
		Base: where(base, os.Getenv(EnvPairedBase)), Head: where(head, os.Getenv(EnvPairedHead))}
}

// where is a scenario's file:line, the file relative to its side's root
// when it is under it.
func where(sc *scenario.Scenario, root string) string {
	file := sc.File
	if rel, err := relTo(root, file); err == nil && root != "" {
		file = filepath.ToSlash(rel)
	}
	return fmt.Sprintf("%s:%d", file, sc.Line)
}

// BaseTarget is the target spec of base's scenario bsc. Its simulator
// image, for a sim target and a container target's backends, is built
// from the base checkout when that checkout is servegate itself, and
// is otherwise head's: the servegate version the test builds with.
func BaseTarget(ctx context.Context, bsc *scenario.Scenario, log io.Writer) (scenario.Target, error) {
	spec := bsc.Target
	if err := Pairable(bsc); err != nil {
		return spec, err
	}
	root := os.Getenv(EnvPairedBase)
	if !isServegate(root) {
		return spec, nil
	}
	img, err := simulator.ImageAt(ctx, root, log)
	if err != nil {
		return spec, fmt.Errorf("paired mode: base's simulator: %w", err)
	}
	if spec.Kind == scenario.TargetSim && spec.Image == "" {
		spec.Image = img
	}
	spec.Backends = append([]scenario.Backend(nil), spec.Backends...)
	for i := range spec.Backends {
		if spec.Backends[i].Image == "" {
			spec.Backends[i].Image = img
		}
	}
	return spec, nil
}

// servegateModule is servegate's module path.
const servegateModule = "github.com/servegate/servegate"

// Pairable says why a side's scenario cannot pair: an inproc target
// runs inside the test's process, which both sides share.
func Pairable(sc *scenario.Scenario) error {
	switch sc.Target.Kind {
	case scenario.TargetSim, scenario.TargetContainer, scenario.TargetVLLM, scenario.TargetURL:
		return nil
	}
	return fmt.Errorf("paired mode: scenario %s: a %s target runs inside the test's process, which base and head would share; paired mode runs sim, container, vllm and url targets", sc.Name, sc.Target.Kind)
}

// CheckSides says why base's and head's targets cannot be two sides of
// a pair: two url targets at one URL are one server.
func CheckSides(base, head *scenario.Scenario) error {
	if base.Target.Kind == scenario.TargetURL && head.Target.Kind == scenario.TargetURL &&
		sameURL(base.Target.URL, head.Target.URL) {
		return fmt.Errorf("paired mode: scenario %s: base's and head's url targets are both %s, one server; "+
			"deploy each side and give base's URL in %s (servegate compare -base-url), head's in %s (-head-url)",
			head.Name, redact.String(head.Target.URL), EnvBaseURL, scenario.EnvURL)
	}
	return nil
}

// sameURL compares two base URLs, ignoring a trailing slash and the
// case of the scheme and host.
func sameURL(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimRight(s, "/")
		if u, err := url.Parse(s); err == nil {
			u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
			return u.String()
		}
		return s
	}
	return norm(a) == norm(b)
}

// isServegate reports whether root is a checkout of servegate's module.
func isServegate(root string) bool {
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`) == servegateModule
		}
	}
	return false
}

// ExecutePair runs plan against base and head at the same time, the one
// baseFirst says started first, and returns both outcomes. When either
// run is invalid the whole pair runs again, up to Plan.Harness.Reruns
// times, so that both outcomes of a pair always come from one attempt;
// hooks.Rerun sees both outcomes of each attempt run again.
func ExecutePair(ctx context.Context, plan *Plan, base, head *Target, baseFirst bool, hooks Hooks) (ob, oh *Outcome, err error) {
	if err := checkStartAt(plan); err != nil {
		return nil, nil, err
	}
	if err := plan.Prepare(ctx); err != nil {
		return nil, nil, err
	}
	once := hooks
	once.Rerun = nil
	for attempt := 0; ; attempt++ {
		ob, oh, err = executePairOnce(ctx, plan, base, head, baseFirst, once)
		if err != nil || (ob.Invalid() == "" && oh.Invalid() == "") || attempt >= plan.Harness.Reruns || ctx.Err() != nil {
			return ob, oh, err
		}
		if hooks.Rerun != nil {
			hooks.Rerun(ob)
			hooks.Rerun(oh)
		}
	}
}

// executePairOnce runs both sides of a prepared plan once, at once.
func executePairOnce(ctx context.Context, plan *Plan, base, head *Target, baseFirst bool, hooks Hooks) (ob, oh *Outcome, err error) {
	var errB, errH error
	runs := []func(){
		func() { ob, errB = executeOnce(ctx, plan, base, hooks) },
		func() { oh, errH = executeOnce(ctx, plan, head, hooks) },
	}
	if !baseFirst {
		runs[0], runs[1] = runs[1], runs[0]
	}
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(run)
	}
	wg.Wait()
	if err := errors.Join(errB, errH); err != nil {
		return nil, nil, err
	}
	return ob, oh, nil
}

// A SideError is an error of one side of a pair: its target did not
// start (Start), or its run did not end.
type SideError struct {
	Side  string
	Start bool
	Err   error
}

func (e *SideError) Error() string { return e.Side + "'s " + e.Err.Error() }
func (e *SideError) Unwrap() error { return e.Err }

// A StartFunc starts one side's target.
type StartFunc func(ctx context.Context) (*Target, error)

// ExecutePairInTurn runs plan on base's target and on head's in turn,
// the one baseFirst says first (PairAlternate). Each side's target is
// started just before its run and stopped after it, so that the two
// servers never hold the machine's CPUs, memory or GPU at once. An
// invalid run is run again on its own side (Plan.Harness.Reruns): the
// two runs of a pair do not share a moment anyway. An error is a
// *SideError.
func ExecutePairInTurn(ctx context.Context, plan *Plan, startBase, startHead StartFunc, baseFirst bool, hooks Hooks) (ob, oh *Outcome, err error) {
	if err := checkStartAt(plan); err != nil {
		return nil, nil, err
	}
	if err := plan.Prepare(ctx); err != nil {
		return nil, nil, err
	}
	type side struct {
		name  string
		start StartFunc
		out   **Outcome
	}
	sides := []side{{"base", startBase, &ob}, {"head", startHead, &oh}}
	if !baseFirst {
		sides[0], sides[1] = sides[1], sides[0]
	}
	for _, s := range sides {
		tgt, err := s.start(ctx)
		if err != nil {
			return nil, nil, &SideError{Side: s.name, Start: true, Err: err}
		}
		o, err := Execute(ctx, plan, tgt, hooks)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		cerr := tgt.Close(cctx)
		cancel()
		if err = errors.Join(err, cerr); err != nil {
			return nil, nil, &SideError{Side: s.name, Err: err}
		}
		*s.out = o
	}
	return ob, oh, nil
}
