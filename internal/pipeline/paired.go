package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/simulator"
)

// Paired mode (ci/compare.sh --paired). With SERVEGATE_PAIRED_BASE set,
// Bench runs every scenario against two targets at the same time: head's,
// started as the scenario says from this checkout, and base's, started
// from the scenario file of the same path in the base checkout. One
// harness process, this one (head's code), drives both with the same
// plan: the same dataset, the same seed and so the same arrival
// schedule, each target through its own Execute, the two started
// together, the side started first alternating with the pair label. The
// machine's noise at that moment falls on both runs of a pair, and
// internal/gate -paired compares them pair by pair.
//
// Only targets built from each side's sources can be paired: kind sim
// (base's simulator image is built from the base checkout, with
// simulator.ImageAt) and kind container (base's scenario file names its
// image or build context, which resolves in the base checkout). A
// container target's simulator backends come from this checkout.
const (
	// EnvPairedBase is the base checkout's root directory.
	EnvPairedBase = "SERVEGATE_PAIRED_BASE"
	// EnvPairedHead is the head checkout's root directory, against which
	// a scenario file's path is taken to find base's.
	EnvPairedHead = "SERVEGATE_PAIRED_HEAD"
	// EnvPair is the pair label (a positive integer, default 1), written
	// as pair: on both runs. Base starts first when it is odd, head when
	// it is even.
	EnvPair = "SERVEGATE_PAIR"
)

// baseScenario loads the base side's scenario of sc: the scenario of
// the same name in the file of the same path under the base checkout,
// with the same environment overrides.
func baseScenario(sc *scenario.Scenario) (*scenario.Scenario, error) {
	baseRoot, headRoot := os.Getenv(EnvPairedBase), os.Getenv(EnvPairedHead)
	if headRoot == "" {
		return nil, fmt.Errorf("paired mode: %s is set but %s (the head checkout's root) is not", EnvPairedBase, EnvPairedHead)
	}
	if sc.File == "" {
		return nil, fmt.Errorf("paired mode: scenario %s has no file, so base's cannot be found", sc.Name)
	}
	file, err := filepath.Abs(sc.File)
	if err != nil {
		return nil, fmt.Errorf("paired mode: %w", err)
	}
	head, err := filepath.Abs(headRoot)
	if err != nil {
		return nil, fmt.Errorf("paired mode: %w", err)
	}
	rel, err := filepath.Rel(head, file)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("paired mode: scenario file %s is not under %s=%s", file, EnvPairedHead, headRoot)
	}
	scs, err := scenario.LoadFile(filepath.Join(baseRoot, rel))
	if err != nil {
		return nil, fmt.Errorf("paired mode: base's scenario %s: %w", sc.Name, err)
	}
	for _, b := range scs {
		if b.Name == sc.Name {
			return b.Override(scenario.EnvFromOS())
		}
	}
	return nil, fmt.Errorf("paired mode: base's %s has no scenario %s", filepath.Join(baseRoot, rel), sc.Name)
}

// BaseTarget is the target spec of base's side of sc.
func BaseTarget(ctx context.Context, sc *scenario.Scenario, log io.Writer) (scenario.Target, error) {
	bsc, err := baseScenario(sc)
	if err != nil {
		return scenario.Target{}, err
	}
	spec := bsc.Target
	switch spec.Kind {
	case scenario.TargetSim:
		if spec.Image == "" {
			img, err := simulator.ImageAt(ctx, os.Getenv(EnvPairedBase), log)
			if err != nil {
				return spec, fmt.Errorf("paired mode: base's simulator: %w", err)
			}
			spec.Image = img
		}
	case scenario.TargetContainer:
	default:
		return spec, fmt.Errorf("paired mode: scenario %s: a %s target is not built from each side's sources; paired mode runs sim and container targets", sc.Name, spec.Kind)
	}
	return spec, nil
}

// ExecutePair runs plan against base and head at the same time, the one
// baseFirst says started first, and returns both outcomes.
func ExecutePair(ctx context.Context, plan *Plan, base, head *Target, baseFirst bool, hooks Hooks) (ob, oh *Outcome, err error) {
	var errB, errH error
	runs := []func(){
		func() { ob, errB = Execute(ctx, plan, base, hooks) },
		func() { oh, errH = Execute(ctx, plan, head, hooks) },
	}
	if !baseFirst {
		runs[0], runs[1] = runs[1], runs[0]
	}
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	wg.Wait()
	if err := errors.Join(errB, errH); err != nil {
		return nil, nil, err
	}
	return ob, oh, nil
}
