package benchtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
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

// pairedMode reports whether Bench runs in paired mode.
func pairedMode() bool { return os.Getenv(EnvPairedBase) != "" }

// pairLabel returns SERVEGATE_PAIR, 1 when unset.
func pairLabel() (int, error) {
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

// runPairedBench is runBench in paired mode: one pair per iteration
// (run it with -benchtime 1x; each go test invocation is one pair); a
// capacity scenario is skipped, saying why. Head's
// metrics are reported to testing.B and written to bench.benchfmt, base's
// to bench-base.benchfmt, both labelled pair: SERVEGATE_PAIR.
func runPairedBench(b *testing.B, owner testing.TB, sc *scenario.Scenario) {
	pair, err := pairLabel()
	require.NoError(b, err)
	if sc.Capacity != nil {
		b.Skipf("paired mode: scenario %s is a capacity search, whose steps differ between the sides and do not pair; gate it with ci/compare.sh --interleaved", sc.Name)
	}
	plan, head := start(b, owner, sc)
	log := pipeline.TestLog{TB: b}
	spec, err := pipeline.BaseTarget(b.Context(), sc, log)
	require.NoError(b, err)
	base, err := pipeline.Shared.Acquire(context.Background(), owner, spec)
	require.NoError(b, err, "start base's %s target of scenario %s", spec.Kind, sc.Name)
	if b.N != 1 {
		b.Fatalf("paired mode runs one pair per go test invocation: use -benchtime 1x (b.N = %d)", b.N)
	}
	ctx, cancel := pipeline.RunContext(b.Context(), plan)
	defer cancel()
	require.NoError(b, plan.Prepare(ctx))
	baseFirst := pair%2 == 1
	b.StartTimer()
	ob, oh, err := pipeline.ExecutePair(ctx, plan, base, head, baseFirst, rerunHooks(b, "bench"))
	b.StopTimer()
	require.NoError(b, err)
	label := strconv.Itoa(pair)
	ob.Pair, oh.Pair = label, label
	first := "base"
	if !baseFirst {
		first = "head"
	}
	b.Logf("pair %s: base (%s) and head (%s) at the same time, %s started first", label, base.Image, head.Image, first)
	save(b, ob, "bench-base", baseBenchfmt, b.Name())
	save(b, oh, "bench", benchBenchfmt, b.Name())
	var units []string
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
