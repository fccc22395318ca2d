// Package benchtest runs servegate scenarios from go test: Run and RunDir
// as subtests that assert the SLOs with testify, Bench and BenchDir as
// benchmarks that report the metrics in benchstat units. Targets are
// started once and shared by the scenarios that use the same one; every
// run writes vLLM's result JSON and a benchfmt file under OutDir.
//
//	func TestScenarios(t *testing.T)      { benchtest.RunDir(t, ".") }
//	func BenchmarkScenarios(b *testing.B) { benchtest.BenchDir(b, ".") }
//	func TestMain(m *testing.M)           { os.Exit(benchtest.Main(m)) }
package benchtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/report"
)

// Run runs sc as the subtest scenario=<name> of t and asserts every one of
// its SLO bounds: the SLO table (metric, bound, measured, verdict) goes to
// the test log and each violated bound fails the test with a message that
// names the metric, the measured value and the bound. The environment
// overrides (SERVEGATE_TARGET, ...) apply. The target is shared with the
// other scenarios t runs and stopped when t ends (or at the end of the
// process under Main).
func Run(t *testing.T, sc *scenario.Scenario) {
	t.Helper()
	owner := t
	t.Run("scenario="+sc.Name, func(t *testing.T) { runTest(t, owner, sc) })
}

// RunDir runs every scenario file (*.yaml, *.yml) of dir with Run, one
// subtest each. A file that does not load fails t with the file:line
// message.
func RunDir(t *testing.T, dir string) {
	t.Helper()
	scs, err := scenario.LoadDir(dir)
	require.NoError(t, err)
	skip := shardScenarios(t, scs)
	for _, sc := range scs {
		if why, ok := skip[sc.Name]; ok {
			t.Run("scenario="+sc.Name, func(t *testing.T) { t.Skip(why) })
			continue
		}
		Run(t, sc)
	}
}

// start applies the environment overrides, plans the run and acquires
// the target. A scenario that cannot run on the target the overrides
// select (*scenario.UnsupportedError) is skipped with the reason.
func start(tb testing.TB, owner testing.TB, sc *scenario.Scenario) (*pipeline.Plan, *pipeline.Target) {
	tb.Helper()
	sc, err := sc.Override(scenario.EnvFromOS())
	if unsup := (*scenario.UnsupportedError)(nil); errors.As(err, &unsup) {
		tb.Skip(unsup.Error())
	}
	require.NoError(tb, err)
	plan := pipeline.NewPlan(sc)
	require.NoError(tb, pipeline.ApplyLoadShard(plan))
	tgt, err := pipeline.Shared.Acquire(context.Background(), owner, plan.Target)
	require.NoError(tb, err, "start the %s target of scenario %s", plan.Target.Kind, sc.Name)
	tb.Cleanup(func() {
		if tb.Failed() {
			logTarget(tb, tgt)
		}
	})
	return plan, tgt
}

func runTest(t *testing.T, owner testing.TB, sc *scenario.Scenario) {
	plan, tgt := start(t, owner, sc)
	if plan.Capacity != nil {
		runCapacityTest(t, plan, tgt)
		return
	}
	ctx, cancel := pipeline.RunContext(t.Context(), plan)
	defer cancel()
	o, err := pipeline.Execute(ctx, plan, tgt, rerunHooks(t, "test"))
	require.NoError(t, err)
	save(t, o, "test", testBenchfmt, t.Name())
	logRun(t, o)

	var table bytes.Buffer
	require.NoError(t, report.WriteSLOTable(&table, o.Table()))
	t.Logf("scenario %s on %s target (%s): %d completed, %d failed in %.2fs\n%s",
		plan.Name, tgt.Kind, tgt.Model, o.Summary.Completed, o.Summary.Failed, o.Result.Duration.Seconds(), table.String())
	var md bytes.Buffer
	fmt.Fprintf(&md, "### %s\n\n", t.Name())
	_ = report.WriteSLOMarkdown(&md, o.Table())
	md.WriteString("\n")
	if err := out.appendText(sloMarkdown, md.String()); err != nil {
		t.Errorf("write slo table: %v", err)
	}
	if err := o.InvalidError(); err != nil {
		// The server's SLOs are not judged: a generator that fell behind
		// would blame the server for its own delay.
		t.Error(err)
		return
	}
	for _, v := range o.Verdicts {
		assert.Truef(t, v.Pass, "SLO violated in scenario %s: %s", plan.Name, report.SLOFailure([]scenario.Verdict{v}))
	}
	if t.Failed() {
		logFailures(t, o)
	}
}

// rerunHooks keep the result JSON of every invalid run that Execute runs
// again and say so; only the last run gets a benchfmt line.
func rerunHooks(tb testing.TB, mode string) pipeline.Hooks {
	return pipeline.Hooks{Rerun: func(o *pipeline.Outcome) {
		path, err := out.writeResult(o.Plan.Name, mode, o.ResultJSON(o.RunInfo(), true))
		if err != nil {
			tb.Errorf("save result: %v", err)
		}
		tb.Logf("%s\n%v; running it again (harness.reruns %d), its result: %s", o.HealthLine(), o.InvalidError(), o.Plan.Harness.Reruns, path)
	}}
}

// save writes the run's result JSON and benchfmt line, logs where and
// returns the result JSON's path.
func save(tb testing.TB, o *pipeline.Outcome, mode, benchfmtFile, testName string) string {
	tb.Helper()
	path, err := out.writeResult(o.Plan.Name, mode, o.ResultJSON(o.RunInfo(), true))
	if err != nil {
		tb.Errorf("save result: %v", err)
	}
	bpath, err := out.writeBenchfmt(benchfmtFile, benchName(testName), o.BenchConfig(), o.BenchMetrics())
	if err != nil {
		tb.Errorf("save benchfmt: %v", err)
	}
	tb.Logf("results: %s, %s", path, bpath)
	return path
}

// logRun logs the load generator's health, why a run stopped early and
// the engine's warnings.
func logRun(tb testing.TB, o *pipeline.Outcome) {
	tb.Helper()
	tb.Log(o.HealthLine())
	if o.Result.Stopped != nil {
		tb.Logf("the run stopped early: %v", o.Result.Stopped)
	}
	for _, w := range o.Result.Warnings {
		tb.Logf("warning: %v", w)
	}
}

// logFailures logs the first failed requests' errors.
func logFailures(tb testing.TB, o *pipeline.Outcome) {
	tb.Helper()
	n := 0
	for _, r := range o.Result.Records {
		if r.Success || r.Error == "" {
			continue
		}
		if n == 5 {
			tb.Logf("... and more failed requests (see the result JSON's errors)")
			break
		}
		tb.Logf("request %s failed (%s): %s", r.RequestID, r.Failure, r.Error)
		n++
	}
}

// logsShown holds the targets whose log a failed test has shown, so the
// other tests sharing a target do not repeat it.
var logsShown sync.Map

// logTarget writes the end of the target's log, read now, to the test log:
// once per target, the first test that fails shows it and the others point
// to it.
func logTarget(tb testing.TB, tgt *pipeline.Target) {
	tb.Helper()
	if _, shown := logsShown.LoadOrStore(tgt, true); shown {
		tb.Logf("%s target log (%s): shown above, with the first failed test on this target", tgt.Kind, tgt.BaseURL)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs, err := tgt.Logs(ctx)
	if err != nil {
		tb.Logf("%s target logs: %v", tgt.Kind, err)
		return
	}
	logTail(tb, tgt, logs)
}

// logTail writes the last lines of a target's log to the test log.
func logTail(tb testing.TB, tgt *pipeline.Target, logs string) {
	tb.Helper()
	if logs == "" {
		return
	}
	lines := strings.Split(strings.TrimRight(logs, "\n"), "\n")
	const keep = 200
	if len(lines) > keep {
		lines = append([]string{fmt.Sprintf("[%d earlier lines]", len(lines)-keep)}, lines[len(lines)-keep:]...)
	}
	tb.Logf("%s target log (%s):\n%s", tgt.Kind, redact.String(tgt.BaseURL), strings.Join(lines, "\n"))
}

// Main runs the tests and benchmarks of a package with targets shared by
// all of them (across -count repetitions too) and stopped at the end. Use
// it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(benchtest.Main(m)) }
//
// Without it a target lives as long as the test or benchmark that called
// Run, RunDir, Bench or BenchDir.
func Main(m *testing.M) int {
	pipeline.Shared.Keep()
	code := m.Run()
	if err := pipeline.Shared.CloseAll(); err != nil {
		fmt.Println("benchtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
