package benchtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/redact"
)

// runPairedBench is runBench in paired mode (`servegate compare`, see
// internal/pipeline's paired.go): one pair per process, run with
// -benchtime 1x. Head's metrics are reported to testing.B and written to
// bench.benchfmt, base's to bench-base.benchfmt, both labelled pair:
// SERVEGATE_PAIR. Every outcome, a pair or why there is none, is left in
// <scenario>.pair.json for the comparison.
func runPairedBench(b *testing.B, owner testing.TB, sc *scenario.Scenario) {
	began := time.Now()
	rec := pipeline.PairRecord{Version: pipeline.PairRecordVersion, Scenario: sc.Name, Checked: pipeline.PairCheck()}
	problem := func(kind, side string, err error) {
		rec.Problem = &pipeline.PairProblem{Kind: kind, Side: side, Message: err.Error()}
		writeRecord(b, &rec)
		if kind == pipeline.ProblemNew || kind == pipeline.ProblemSkipped {
			b.Skip(err)
		}
		b.Fatal(err)
	}
	var err error
	if rec.Pair, err = pipeline.PairLabel(); err == nil {
		rec.Mode, err = pipeline.PairMode()
	}
	if err == nil && b.N != 1 {
		err = fmt.Errorf("paired mode runs one pair per process: use -benchtime 1x (b.N = %d)", b.N)
	}
	if err != nil {
		problem(pipeline.ProblemRun, "", err)
	}
	if sc.Capacity != nil {
		problem(pipeline.ProblemSkipped, "", fmt.Errorf("scenario %s is a capacity search, whose steps differ between the sides and do not pair", sc.Name))
	}
	head, err := sc.Override(scenario.EnvFromOS())
	if err != nil {
		problem(pipeline.ProblemScenario, "head", err)
	}
	rec.Workload = head.Workload
	base, err := pipeline.BaseScenario(sc)
	switch {
	case errors.Is(err, pipeline.ErrNewInHead):
		problem(pipeline.ProblemNew, "base", fmt.Errorf("scenario %s is new in head: %w", sc.Name, err))
	case err != nil:
		problem(pipeline.ProblemScenario, "base", err)
	}
	if err := pipeline.CheckIdentity(base, head); err != nil {
		problem(pipeline.ProblemIdentity, "", err)
	}
	if err := pipeline.Pairable(base); err != nil {
		problem(pipeline.ProblemScenario, "base", err)
	}
	if err := pipeline.Pairable(head); err != nil {
		problem(pipeline.ProblemScenario, "head", err)
	}
	if err := pipeline.CheckSides(base, head); err != nil {
		problem(pipeline.ProblemScenario, "", err)
	}
	rec.Mode = pipeline.ChoosePairMode(rec.Mode, base.Target, head.Target)
	rec.TargetChanges = pipeline.TargetChanges(base.Target, head.Target, os.Getenv(pipeline.EnvPairedBase), os.Getenv(pipeline.EnvPairedHead))
	for _, c := range rec.TargetChanges {
		rec.TargetDiff = append(rec.TargetDiff, c.String())
	}
	plan := pipeline.NewPlan(head)
	if err := pipeline.ApplyLoadShard(plan); err != nil {
		problem(pipeline.ProblemScenario, "head", err)
	}
	if rec.Checked {
		writeRecord(b, &rec)
		b.Skip("paired mode: checked, no target started")
	}
	baseSpec, err := pipeline.BaseTarget(b.Context(), base, pipeline.TestLog{TB: b})
	if err != nil {
		problem(pipeline.ProblemStart, "base", err)
	}
	// Each side is a server of its own, started here rather than taken
	// from the shared pool: equal specs (an A/A) are still two starts.
	var tb, th *pipeline.Target
	// Both sides' targets stop at once: in turn, they cost about 0.3 s
	// of every scenario's pair. The starts have returned by then.
	b.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		for _, t := range []*pipeline.Target{tb, th} {
			if t != nil {
				wg.Go(func() { _ = t.Close(cctx) })
			}
		}
		wg.Wait()
	})
	start := func(side string, spec scenario.Target, tgt **pipeline.Target) pipeline.StartFunc {
		return func(ctx context.Context) (*pipeline.Target, error) {
			t, err := pipeline.StartTarget(ctx, spec, pipeline.TestLog{TB: b})
			if err != nil {
				return nil, fmt.Errorf("start %s's %s target of scenario %s: %w", side, spec.Kind, sc.Name, err)
			}
			*tgt = t
			return t, nil
		}
	}
	startBase := start("base", baseSpec, &tb)
	startHead := start("head", plan.Target, &th)

	ctx, cancel := pipeline.RunContext(b.Context(), plan)
	defer cancel()
	baseFirst := rec.Pair%2 == 1
	hooks := pairRerunHooks(b, func() *pipeline.Target { return tb })
	var ob, oh *pipeline.Outcome
	if rec.Mode == pipeline.PairAlternate {
		b.StartTimer()
		ob, oh, err = pipeline.ExecutePairInTurn(ctx, plan, startBase, startHead, baseFirst, hooks)
		b.StopTimer()
		var se *pipeline.SideError
		if errors.As(err, &se) && se.Start {
			problem(pipeline.ProblemStart, se.Side, se.Err)
		}
	} else {
		if side, err := startTogether(ctx, plan, startBase, startHead); err != nil {
			kind := pipeline.ProblemStart
			if side == "" {
				kind = pipeline.ProblemRun
			}
			problem(kind, side, err)
		}
		b.StartTimer()
		ob, oh, err = pipeline.ExecutePair(ctx, plan, tb, th, baseFirst, hooks)
		b.StopTimer()
	}
	if err != nil {
		problem(pipeline.ProblemRun, "", err)
	}
	rec.Base = pipeline.PairSide{Target: ob.Target.Kind, Image: ob.Target.Image}
	rec.Head = pipeline.PairSide{Target: oh.Target.Kind, Image: oh.Target.Image}
	label := strconv.Itoa(rec.Pair)
	ob.Pair, oh.Pair = label, label
	first := "base"
	if !baseFirst {
		first = "head"
	}
	how := "at the same time"
	if rec.Mode == pipeline.PairAlternate {
		how = "in turn, each started for its run"
	}
	b.Logf("pair %s: base (%s) and head (%s) %s, %s first", label, sideName(ob.Target), sideName(oh.Target), how, first)
	rec.Base.Result = filepath.Base(save(b, ob, "bench-base", baseBenchfmt, b.Name()))
	rec.Head.Result = filepath.Base(save(b, oh, "bench", benchBenchfmt, b.Name()))
	rec.Base.Invalid, rec.Head.Invalid = ob.Invalid(), oh.Invalid()
	rec.Base.NotReset, rec.Head.NotReset = pipeline.NotReset(ob), pipeline.NotReset(oh)
	rec.Base.Headroom, rec.Head.Headroom = pipeline.Headroom(ob), pipeline.Headroom(oh)
	rec.Seconds = time.Since(began).Seconds()
	writeRecord(b, &rec)
	units := []string{}
	sums := map[string]float64{}
	for _, o := range []*pipeline.Outcome{ob, oh} {
		logRun(b, o)
		if err := o.InvalidError(); err != nil {
			b.Logf("%v; this sample is marked invalid", err)
		}
	}
	for _, m := range oh.BenchMetrics() {
		units = append(units, m.Unit)
		sums[m.Unit] = m.Value
	}
	reportBench(b, units, sums, oh)
}

// startTogether starts base's target and head's and prepares plan's
// requests, the three at once: each start waits on its server's health
// check, and on a 2-core machine doing them in turn cost about a second
// of every pair. It returns the side whose start failed ("" for the
// plan) with its error; a target that did start is closed by its
// cleanup.
func startTogether(ctx context.Context, plan *pipeline.Plan, startBase, startHead pipeline.StartFunc) (string, error) {
	var errs [3]error
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = startBase(context.WithoutCancel(ctx)) })
	wg.Go(func() { _, errs[1] = startHead(context.WithoutCancel(ctx)) })
	wg.Go(func() { errs[2] = plan.Prepare(ctx) })
	wg.Wait()
	for i, side := range []string{"base", "head", ""} {
		if errs[i] != nil {
			return side, errs[i]
		}
	}
	return "", nil
}

// writeRecord leaves rec for the comparison, failing b when it cannot.
func writeRecord(b *testing.B, rec *pipeline.PairRecord) {
	b.Helper()
	if err := out.writeRecord(rec); err != nil {
		b.Fatalf("paired mode: %v", err)
	}
}

// pairRerunHooks keep the result JSON of both runs of every pair that
// ExecutePair runs again, base's under base's name, and say so.
func pairRerunHooks(b *testing.B, base func() *pipeline.Target) pipeline.Hooks {
	return pipeline.Hooks{Rerun: func(o *pipeline.Outcome) {
		mode, side := "bench", "head"
		if o.Target == base() {
			mode, side = "bench-base", "base"
		}
		path, err := out.writeResult(o.Plan.Name, mode, o.ResultJSON(o.RunInfo(), true))
		if err != nil {
			b.Errorf("save result: %v", err)
		}
		b.Logf("%s's %s\n%v; running the pair again (harness.reruns %d), its result: %s", side, o.HealthLine(), o.InvalidError(), o.Plan.Harness.Reruns, path)
	}}
}

// sideName names a side's server in the log: its image, or its URL.
func sideName(t *pipeline.Target) string {
	if t.Image != "" {
		return t.Image
	}
	return redact.String(t.BaseURL)
}
