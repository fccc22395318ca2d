package benchtest

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/internal/cpuset"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
)

// execute runs a scenario once against its target, outside any test
// assertion, and returns the outcome.
func execute(t *testing.T, sc *scenario.Scenario, hooks pipeline.Hooks) *pipeline.Outcome {
	t.Helper()
	plan := pipeline.NewPlan(sc)
	tgt, err := pipeline.StartTarget(t.Context(), plan.Target, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tgt.Close(context.Background()) })
	o, err := pipeline.Execute(t.Context(), plan, tgt, hooks)
	require.NoError(t, err)
	return o
}

// TestInvalidRunIsNotTheServersFault: a run past a harness limit is
// invalid. Its error says the load generator fell behind, the SLO table
// voids the server's SLOs instead of failing them, and its benchfmt line
// carries "invalid" (deleted again for the next valid run).
func TestInvalidRunIsNotTheServersFault(t *testing.T) {
	dir := useOut(t)
	// No request can be sent within a nanosecond of being free, and no
	// server answers within a microsecond.
	bad := parse(t, strings.Replace(tiny, "harness: {max_lateness_p99: 0, max_cpu: 0,", "harness: {reruns: 1, max_lateness_p99: 1ns, max_cpu: 0.9,", 1)+"    - p99_ttft_ms <= 0.001\n")
	var reruns []*pipeline.Outcome
	o := execute(t, bad, pipeline.Hooks{Rerun: func(o *pipeline.Outcome) { reruns = append(reruns, o) }})
	require.Len(t, reruns, 1, "an invalid run is run again harness.reruns times")
	assert.NotSame(t, o, reruns[0])
	assert.NotEmpty(t, reruns[0].Invalid())
	err := o.InvalidError()
	require.Error(t, err)
	var ie *pipeline.InvalidRunError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "scenario tiny: invalid run: load generator fell behind: p99_lateness_ms = ")
	assert.Contains(t, err.Error(), "the numbers say nothing about the server")
	assert.NotEmpty(t, report.SLOFailure(o.Verdicts), "the server's SLO did break, and is not reported as such")

	var table bytes.Buffer
	require.NoError(t, report.WriteSLOTable(&table, o.Table()))
	assert.Regexp(t, `p99_lateness_ms \(harness\)\s+<= 1e-06\s+\S+\s+INVALID`, table.String())
	assert.Regexp(t, `client_cpu_ratio \(harness\)\s+<= 0.9\s+\S+\s+PASS`, table.String())
	assert.Regexp(t, `p99_ttft_ms\s+<= 0.001\s+\S+\s+VOID`, table.String())
	assert.NotContains(t, table.String(), "FAIL")

	// Limits off: this run is valid however loaded the machine is.
	good := execute(t, parse(t, tiny), pipeline.Hooks{})
	require.NoError(t, good.InvalidError(), good.HealthLine())
	for _, o := range []*pipeline.Outcome{o, good} {
		_, err := out.writeBenchfmt(testBenchfmt, "Scenarios/scenario=tiny", o.BenchConfig(), o.BenchMetrics())
		require.NoError(t, err)
	}
	results, units := readBenchfmt(t, filepath.Join(dir, testBenchfmt))
	require.Len(t, results, 2)
	assert.Equal(t, o.Invalid(), results[0].GetConfig("invalid"))
	assert.Empty(t, results[1].GetConfig("invalid"))
	assert.Equal(t, "shared", results[1].GetConfig("cpuset"), "an in-process target shares the CPUs")
	for _, u := range []string{"lateness-p99-sec", "client-cpu-ratio", "gc-pause-sec", "sched-latency-p99-sec"} {
		_, ok := results[1].Value(u)
		assert.True(t, ok, "unit %s", u)
		assert.Equal(t, report.Lower, units[u], u)
	}

	js := string(o.ResultJSON(o.RunInfo(), false))
	assert.Contains(t, js, `"invalid": "p99_lateness_ms = `)
	assert.Contains(t, js, `"`+metrics.ClientCPURatio+`": `)
	assert.Contains(t, string(good.ResultJSON(good.RunInfo(), false)), `"invalid": null`)
}

// TestSimTargetCPUSet starts the simulator container: with at least 4
// CPUs it runs on the lower half and this process on the upper half, with
// fewer both share and say so.
func TestSimTargetCPUSet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a container")
	}
	dockertest.Require(t)
	tgt, err := pipeline.StartTarget(t.Context(), scenario.Target{Kind: scenario.TargetSim, Profile: "instant"}, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tgt.Close(context.Background()) })
	if runtime.NumCPU() < cpuset.MinCPUs {
		assert.Equal(t, cpuset.Shared, tgt.CPUSet)
		return
	}
	split, err := cpuset.Isolate()
	require.NoError(t, err)
	assert.Equal(t, split.String(), tgt.CPUSet)
	assert.Contains(t, tgt.CPUSet, "target=")
}
