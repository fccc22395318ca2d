package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/store"
)

// storedBaselineScenario is the end-to-end scenario of the stored baseline:
// 100 chat requests at 40 req/s (Poisson) against an in-process
// simulator with 40 ms engine steps and room for every request, so that
// a request's TTFT is the wait for the next step plus one step: the p99
// moves with the server's step time (the slowdown knob), not with
// queueing. About 2.5 s a run.
const storedBaselineScenario = `name: stored-baseline
description: Stored baseline end to end (cmd/servegate TestStoreBaselineSimulator).
target:
  kind: inproc
  args: [--max_num_seqs=64, --step_fixed_ms=40, --prefill_token_us=5, --seq_us=100, --jitter=0.05]
backend: openai-chat
dataset: {name: random, num_prompts: 100, input_len: 64, output_len: 4, seed: 1}
load: {request_rate: 40, warmups: 2, max_duration: 60s, request_timeout: 30s}
`

// A storedBaselineRunner runs one scenario against in-process simulators and
// writes each run's files as a scenario benchmark does: the detailed
// result JSON and the benchfmt line.
type storedBaselineRunner struct {
	t       *testing.T
	plan    *pipeline.Plan
	name    string
	targets map[float64]*pipeline.Target
	n       int
}

func newStoredBaselineRunner(t *testing.T, yaml string) *storedBaselineRunner {
	t.Helper()
	scs, err := scenario.Parse("stored-baseline.yaml", []byte(yaml))
	require.NoError(t, err)
	plan := pipeline.NewPlan(scs[0])
	require.NoError(t, plan.Prepare(t.Context()))
	return &storedBaselineRunner{t: t, plan: plan, name: scs[0].Name, targets: map[float64]*pipeline.Target{}}
}

// run makes one run against the server of the given slowdown (1: base)
// and writes <dir>/<scenario>.bench.<n>.json and a benchfmt line to
// bench; ctx cancelled early makes an interrupted run.
func (r *storedBaselineRunner) run(ctx context.Context, slowdown float64, dir string, bench io.Writer) string {
	r.t.Helper()
	tgt, ok := r.targets[slowdown]
	if !ok {
		spec := r.plan.Target
		spec.Args = append(append([]string(nil), spec.Args...), "--slowdown="+strconv.FormatFloat(slowdown, 'g', -1, 64))
		var err error
		tgt, err = pipeline.StartTarget(r.t.Context(), spec, io.Discard)
		require.NoError(r.t, err)
		r.t.Cleanup(func() { tgt.Close(context.Background()) })
		r.targets[slowdown] = tgt
	}
	o, err := pipeline.Execute(ctx, r.plan, tgt, pipeline.Hooks{})
	require.NoError(r.t, err)
	r.n++
	f := filepath.Join(dir, fmt.Sprintf("%s.bench.%d.json", r.name, r.n))
	require.NoError(r.t, os.WriteFile(f, o.ResultJSON(o.RunInfo(), true), 0o644))
	if bench != nil {
		require.NoError(r.t, report.NewBenchfmtWriter(bench).WriteBenchfmtResult("Scenarios/scenario="+r.name, 1, o.BenchConfig(), o.BenchMetrics()))
	}
	return f
}

// pair runs base (slowdown 1) and head at the same time with one
// schedule, as servegate compare pairs them, and returns their
// result files.
func (r *storedBaselineRunner) pair(ctx context.Context, slowdown float64, dir string) (string, string) {
	r.t.Helper()
	// Start both servers first, outside the pair.
	for _, s := range []float64{1, slowdown} {
		if _, ok := r.targets[s]; !ok {
			r.run(ctx, s, r.t.TempDir(), nil)
		}
	}
	if slowdown == 1 {
		r.run(ctx, 1.0000001, r.t.TempDir(), nil) // A/A: a second server of the same speed
		slowdown = 1.0000001
	}
	var ob, oh *pipeline.Outcome
	var errB, errH error
	done := make(chan struct{})
	go func() { ob, errB = pipeline.Execute(ctx, r.plan, r.targets[1], pipeline.Hooks{}); close(done) }()
	oh, errH = pipeline.Execute(ctx, r.plan, r.targets[slowdown], pipeline.Hooks{})
	<-done
	require.NoError(r.t, errB)
	require.NoError(r.t, errH)
	r.n++
	b := filepath.Join(dir, fmt.Sprintf("%s.bench-base.%d.json", r.name, r.n))
	h := filepath.Join(dir, fmt.Sprintf("%s.bench.%d.json", r.name, r.n))
	require.NoError(r.t, os.WriteFile(b, ob.ResultJSON(ob.RunInfo(), true), 0o644))
	require.NoError(r.t, os.WriteFile(h, oh.ResultJSON(oh.RunInfo(), true), 0o644))
	return b, h
}

// addMain files main's runs with servegate history add: the benchfmt
// file and the result JSON.
func addMain(t *testing.T, dir, commit, runner string, bench []byte, results []string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "bench.benchfmt")
	require.NoError(t, os.WriteFile(f, bench, 0o644))
	args := append([]string{"history", "add", "--store", dir, "--commit", commit, "--commit-time", "1767225600", "--runner", runner, f}, results...)
	code, out, errOut := runCmd(t, args...)
	require.Equal(t, 0, code, out+errOut)
}

// TestStoreBaselineSimulator runs the stored baseline end to end with
// real parts: main's 8 runs of a scenario on the in-process simulator,
// filed with servegate history add; then, as servegate compare -mode stored
// does, 2 fresh base runs beside head's first 2, head
// runs alone after, and servegate gate -sequential -baseline-store after
// each head run until it decides. An unchanged head passes or stays
// undecided (never fails); a head whose server is 10% slower (the
// simulator's slowdown knob) fails, or is undecided with its reason when
// the machine is too noisy (never passes). Each baseline it cannot use
// is exit 2 with its reason. Skipped under -short: about 30 runs of 2.5 s.
// The two verdicts run only with SERVEGATE_STORE_SIM_TRIALS=N, N trials
// of each, and print the tally (docs/logs/2026-12-02-verdicts.md); the
// bad baselines run always.
func TestStoreBaselineSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("about 30 simulator runs of 2.5 s")
	}
	const runner = "inproc-test"
	// The verdicts compare runs made minutes apart in real time, so the
	// machine's load between them decides as much as the slowdown does.
	// In CI's go test ./..., other packages' tests ran beside main's runs
	// and a 10% slower head measured 2.9% faster and passed. They run
	// only when asked; TestStored in internal/compare checks the same
	// verdicts on samples with no measured noise, on every run.
	trials := 0
	if n, err := strconv.Atoi(os.Getenv("SERVEGATE_STORE_SIM_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	r := newStoredBaselineRunner(t, storedBaselineScenario)
	mainDir := t.TempDir()
	var bench bytes.Buffer
	var results []string
	for range 8 {
		results = append(results, r.run(t.Context(), 1, mainDir, &bench))
	}
	mainStore := filepath.Join(t.TempDir(), "store")
	addMain(t, mainStore, "c1", runner, bench.Bytes(), results)
	t.Logf("load after main's runs: %s", loadAvg())

	// verdict runs head (slowdown) the way servegate compare -mode stored
	// does and returns the gate's last exit code and output, and the runs
	// made; on a drift it falls back, as it does, to base and head
	// paired (both servers at once, one schedule) and gate -sequential.
	verdict := func(slowdown float64) (int, string, int) {
		dir := t.TempDir()
		var fresh, heads []string
		maxRuns := gate.DefaultSequential().MaxPairs
		for k := 1; k <= maxRuns; k++ {
			if k <= 2 {
				fresh = append(fresh, r.run(t.Context(), 1, dir, nil))
			}
			heads = append(heads, r.run(t.Context(), slowdown, dir, nil))
			args := []string{"gate", "-sequential", "-baseline-store", mainStore, "-runner", runner, "-base-commit", "c1"}
			for _, f := range fresh {
				args = append(args, "-fresh-base", f)
			}
			code, out, errOut := runCmd(t, append(args, heads...)...)
			if code == 2 && strings.Contains(errOut, "not decided yet") {
				continue
			}
			if code != 2 || !strings.Contains(errOut, "drift:") {
				return code, out + errOut, len(fresh) + len(heads)
			}
			log := out + errOut + "-- fallback: base and head paired --\n"
			var pairs []string
			for p := 1; p <= maxRuns; p++ {
				b, h := r.pair(t.Context(), slowdown, dir)
				pairs = append(pairs, b, h)
				code, out, errOut := runCmd(t, append([]string{"gate", "-sequential"}, pairs...)...)
				if code == 2 && strings.Contains(errOut, "not decided yet") {
					continue
				}
				return code, log + out + errOut, len(fresh) + len(heads) + len(pairs)
			}
		}
		t.Fatal("the gate asked for more runs than the cap")
		return 0, "", 0
	}
	for _, tt := range []struct {
		name     string
		slowdown float64
		ok       func(code int) bool
	}{
		{"A/A", 1, func(code int) bool { return code == gate.ExitPass || code == gate.ExitBadInput }},
		// Caught, or, on a machine too noisy to tell (a drift found, and
		// the paired fallback undecided at the cap), exit 2 with the
		// reason: never a pass. On this 2-core machine at load 2-4 the
		// store caught it in 5 runs; at load 5 every trial fell back.
		{"head 10% slower", 1.10, func(code int) bool { return code == gate.ExitRegression || code == gate.ExitBadInput }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if trials == 0 {
				t.Skip("depends on the machine's load over minutes: SERVEGATE_STORE_SIM_TRIALS=N runs N trials")
			}
			var walls []time.Duration
			var runs []int
			counts := map[string]int{}
			for trial := 1; trial <= trials; trial++ {
				start := time.Now()
				code, out, n := verdict(tt.slowdown)
				wall := time.Since(start)
				path := "store"
				if strings.Contains(out, "-- fallback") {
					path = "fallback"
				}
				counts[fmt.Sprintf("%s exit %d", path, code)]++
				walls, runs = append(walls, wall), append(runs, n)
				t.Logf("trial %d: %s, exit %d after %d server runs, %v, load %s:\n%s", trial, path, code, n, wall.Round(time.Second), loadAvg(), out)
				require.True(t, tt.ok(code), "exit %d:\n%s", code, out)
				if code == gate.ExitBadInput {
					// Undecided or a drift: said so, never a pass.
					require.Regexp(t, `Remedies: more requests per run|drift: today's base differs`, out)
				}
			}
			slices.Sort(walls)
			slices.Sort(runs)
			t.Logf("%s, %d trial(s): %v; server runs min/median/max %d/%d/%d; wall %v/%v/%v; load %s", tt.name, trials, counts,
				runs[0], runs[len(runs)/2], runs[len(runs)-1], walls[0].Round(time.Second), walls[len(walls)/2].Round(time.Second), walls[len(walls)-1].Round(time.Second), loadAvg())
		})
	}

	// Bad baselines, each exit 2 with its reason: one fresh base run and
	// three head runs of today, against stores that cannot serve.
	dir := t.TempDir()
	today := []string{"-fresh-base", r.run(t.Context(), 1, dir, nil)}
	for range 3 {
		today = append(today, r.run(t.Context(), 1, dir, nil))
	}
	// Another scenario version: main ran the scenario with 45 ms steps
	// (its scenario-sha differs).
	other := newStoredBaselineRunner(t, strings.Replace(storedBaselineScenario, "--step_fixed_ms=40", "--step_fixed_ms=45", 1))
	var otherBench bytes.Buffer
	otherResult := other.run(t.Context(), 1, t.TempDir(), &otherBench)
	otherStore := filepath.Join(t.TempDir(), "other")
	addMain(t, otherStore, "c1", runner, otherBench.Bytes(), []string{otherResult})
	// Invalid runs: main's runs and one interrupted (cut short at 0.5 s).
	cut, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	var invalidBench bytes.Buffer
	invalidBench.Write(bench.Bytes())
	interrupted := r.run(cut, 1, t.TempDir(), &invalidBench)
	cancel()
	invalidStore := filepath.Join(t.TempDir(), "invalid")
	addMain(t, invalidStore, "c1", runner, invalidBench.Bytes(), append(append([]string(nil), results...), interrupted))
	// Too few runs: main's first two.
	lines := strings.SplitAfter(bench.String(), "\n")
	var fewBench strings.Builder
	for _, l := range lines {
		if strings.HasPrefix(l, "BenchmarkScenarios/") && strings.Count(fewBench.String(), "BenchmarkScenarios/") == 2 {
			break
		}
		fewBench.WriteString(l)
	}
	fewStore := filepath.Join(t.TempDir(), "few")
	addMain(t, fewStore, "c1", runner, []byte(fewBench.String()), results[:2])
	// Stale: main's runs filed (through the store's API) 40 days ago.
	staleStore := filepath.Join(t.TempDir(), "stale")
	st, err := store.Create(staleStore)
	require.NoError(t, err)
	bf := filepath.Join(t.TempDir(), "bench.benchfmt")
	require.NoError(t, os.WriteFile(bf, bench.Bytes(), 0o644))
	_, err = st.Add(t.Context(), store.AddRequest{Commit: "c1", CommitTime: time.Unix(1767225600, 0), Runner: runner,
		Files: append([]string{bf}, results...), Now: time.Now().Add(-40 * 24 * time.Hour)})
	require.NoError(t, err)
	// Drift: today's base is the 50% slower server. It measured +39.4%
	// (±3.9%) in median TTFT, against a drift limit of ±2.47%: (log 1.394
	// - log 1.0247)/0.039 = 7.9 standard errors, so a miss needs a
	// deviation past 7.9 sigma (p < 1e-14), or past 3.9 sigma (p < 1e-4)
	// were the standard error twice that measured. A 10% slower server
	// moved the median by -3.9% (±4.5%) under load: no test at all.
	drifted := []string{"-fresh-base", r.run(t.Context(), 1.5, dir, nil)}
	for range 3 {
		drifted = append(drifted, r.run(t.Context(), 1.5, dir, nil))
	}

	for _, tt := range []struct {
		name, dir, runner, commit string
		runs                      []string
		want                      string
	}{
		{"missing", mainStore, runner, "c2", today, "baseline: missing: main's commit c2 (the pull request's base) has no runs in the store"},
		{"stale", staleStore, runner, "c1", today, "stale: main's runs (commit c1) were added"},
		{"another scenario version", otherStore, runner, "c1", today, "ran another version of the scenario"},
		{"another runner type", mainStore, "other-runner", "c1", today, "has no runs of runner type other-runner (it has: inproc-test)"},
		{"invalid runs", invalidStore, runner, "c1", today, "1 invalid or interrupted result line(s) beside 8 valid"},
		{"fewer runs than the test needs", fewStore, runner, "c1", today, "has 2 valid run(s), the test needs 3"},
		{"drift", mainStore, runner, "c1", drifted, "drift: today's base differs from the stored baseline by +"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"gate", "-sequential", "-baseline-store", tt.dir, "-runner", tt.runner, "-base-commit", tt.commit}, tt.runs...)
			code, out, errOut := runCmd(t, args...)
			t.Logf("%s%s", out, errOut)
			require.Equal(t, gate.ExitBadInput, code)
			require.Contains(t, errOut, tt.want)
		})
	}
}

// loadAvg is the load average line of /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
