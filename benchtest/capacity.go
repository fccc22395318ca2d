package benchtest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/capacity"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
)

// searchCapacity runs the capacity search of plan, writes its result JSON and
// benchfmt line, and logs the step table and warnings.
func searchCapacity(tb testing.TB, plan *pipeline.Plan, tgt *pipeline.Target, mode, benchfmtFile string) *pipeline.CapacitySearch {
	tb.Helper()
	// The budget is checked before each step; a step that overruns it is
	// cut after two more minutes.
	ctx, cancel := context.WithTimeout(tb.Context(), plan.Capacity.Budget.D()+2*time.Minute)
	defer cancel()
	cs, err := pipeline.SearchCapacity(ctx, plan, tgt, pipeline.CapacityHooks{Step: func(st capacity.Step, _ *pipeline.Outcome) {
		tb.Logf("capacity step at %g req/s: pass=%v", st.Rate, st.Pass)
	}})
	require.NoError(tb, err)
	path, err := out.writeResult(plan.Name, mode, cs.ResultJSON(true))
	if err != nil {
		tb.Errorf("save result: %v", err)
	}
	bpath, err := out.writeBenchfmt(benchfmtFile, benchName(tb.Name()), cs.BenchConfig(), cs.BenchMetrics())
	if err != nil {
		tb.Errorf("save benchfmt: %v", err)
	}
	for _, w := range cs.Warnings {
		tb.Logf("warning: %v", w)
	}
	var table bytes.Buffer
	_ = report.WriteCapacityTable(&table, cs.Result)
	tb.Logf("capacity of scenario %s on %s target (%s):\n%s", plan.Name, tgt.Kind, tgt.Model, table.String())
	tb.Logf("results: %s, %s", path, bpath)
	return cs
}

// runCapacityTest is Run for a scenario with a capacity block: the search
// must find a rate at which every SLO holds.
func runCapacityTest(t *testing.T, plan *pipeline.Plan, tgt *pipeline.Target) {
	cs := searchCapacity(t, plan, tgt, "test", testBenchfmt)
	v := cs.Verdict()
	assert.Truef(t, v.Pass, "capacity of scenario %s: no rate from %g req/s up meets every SLO", plan.Name, plan.Capacity.MinRate)
	if t.Failed() && cs.Best == nil && len(cs.Result.Steps) > 0 {
		t.Logf("the first step failed: %v", cs.Result.Steps[0].Failed)
	}
	var md bytes.Buffer
	md.WriteString("### " + t.Name() + "\n\n")
	_ = report.WriteSLOMarkdown(&md, []scenario.Verdict{v})
	md.WriteString("\n")
	if err := out.appendText(sloMarkdown, md.String()); err != nil {
		t.Errorf("write slo table: %v", err)
	}
}

// runCapacityBench is Bench for a scenario with a capacity block: one
// search per iteration, max-rate-req/s reported.
func runCapacityBench(b *testing.B, plan *pipeline.Plan, tgt *pipeline.Target) {
	var sum float64
	for range b.N {
		b.StartTimer()
		cs := searchCapacity(b, plan, tgt, "bench", benchBenchfmt)
		b.StopTimer()
		sum += cs.Result.MaxRate
	}
	b.ReportMetric(sum/float64(b.N), "max-rate-req/s")
	b.ReportMetric(0, "ns/op")
}
