package benchtest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
)

// Bench runs sc as the sub-benchmark scenario=<name> of b: one full
// scenario run per iteration, its metrics reported with b.ReportMetric in
// benchstat units (ttft-p99-sec, tok/s, req/s, goodput-req/s, ...; the mean
// over the iterations when b.N > 1) and ns/op suppressed. Run it as
//
//	go test -run '^$' -bench . -benchtime=1x -count=10 ./scenarios/...
//
// so each sample is one run and benchstat gets ten of them. Bench does not
// fail on SLOs (that is Run's job); it logs the SLO table. Each iteration
// also writes its result JSON and a line of bench.benchfmt under OutDir.
func Bench(b *testing.B, sc *scenario.Scenario) {
	b.Helper()
	owner := b
	b.Run("scenario="+sc.Name, func(b *testing.B) { runBench(b, owner, sc) })
}

// BenchDir runs every scenario file of dir with Bench.
func BenchDir(b *testing.B, dir string) {
	b.Helper()
	scs, err := scenario.LoadDir(dir)
	require.NoError(b, err)
	skip := shardScenarios(b, scs)
	for _, sc := range scs {
		if why, ok := skip[sc.Name]; ok {
			b.Run("scenario="+sc.Name, func(b *testing.B) { b.Skip(why) })
			continue
		}
		Bench(b, sc)
	}
}

func runBench(b *testing.B, owner testing.TB, sc *scenario.Scenario) {
	b.StopTimer()
	if pipeline.Paired() {
		runPairedBench(b, owner, sc)
		return
	}
	plan, tgt := start(b, owner, sc)
	if plan.Capacity != nil {
		runCapacityBench(b, plan, tgt)
		return
	}
	var (
		units []string
		sums  = map[string]float64{}
		last  *pipeline.Outcome
	)
	for range b.N {
		ctx, cancel := pipeline.RunContext(b.Context(), plan)
		b.StartTimer()
		o, err := pipeline.Execute(ctx, plan, tgt, rerunHooks(b, "bench"))
		b.StopTimer()
		cancel()
		require.NoError(b, err)
		save(b, o, "bench", benchBenchfmt, b.Name())
		logRun(b, o)
		if err := o.InvalidError(); err != nil {
			b.Logf("%v; this sample is marked invalid in %s", err, benchBenchfmt)
		}
		for _, m := range o.BenchMetrics() {
			if _, ok := sums[m.Unit]; !ok {
				units = append(units, m.Unit)
			}
			sums[m.Unit] += m.Value
		}
		last = o
	}
	reportBench(b, units, sums, last)
}

// reportBench reports the mean of each unit over b.N runs and logs the
// SLO table of the last run.
func reportBench(b *testing.B, units []string, sums map[string]float64, last *pipeline.Outcome) {
	for _, u := range units {
		b.ReportMetric(sums[u]/float64(b.N), u)
	}
	b.ReportMetric(0, "ns/op")
	if last != nil {
		var table bytes.Buffer
		_ = report.WriteSLOTable(&table, last.Table())
		b.Logf("SLOs of the last run (not asserted by Bench):\n%s", table.String())
	}
}
