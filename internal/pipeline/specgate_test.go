package pipeline

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/sim"
)

// specGateRuns is the number of runs per side: with 5 a side, perfectly
// separated samples give the U test's p = 2/252 < 0.05.
const specGateRuns = 5

// TestSpecAcceptanceDropFailsGate gates a drop in speculative acceptance.
// One scenario runs against an in-process simulator with speculative
// decoding. The acceptance probability drops from 0.7 in base to 0.4 in
// head. A few real runs a side are interleaved, then judged by
// `servegate gate` with the default policy. Speculation is lossless, so
// only speed and the server's acceptance counters change. The gate fails
// on server-spec-accept-ratio. Its report names that unit and TPOT, the
// latency that moved with it. TTFT is a prefill and does not move.
func TestSpecAcceptanceDropFailsGate(t *testing.T) {
	if testing.Short() {
		t.Skip("10 simulator runs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	scs, err := scenario.Parse("spec-gate.yaml", []byte(`name: spec-gate
target: {kind: url, url: "http://127.0.0.1:1"}
backend: openai
dataset: {name: random, num_prompts: 16, input_len: 32, output_len: 48}
load: {max_concurrency: 8}
server_metrics: {interval: 100ms}
`))
	require.NoError(t, err)
	sc := scs[0]
	targets := map[string]*Target{}
	for side, prob := range map[string]string{"base": "0.7", "head": "0.4"} {
		srv, err := sim.New(sim.Config{Profile: "instant", Set: map[string]string{
			"model": "servegate/sim-spec", "step_fixed_ms": "10", "max_num_seqs": "8",
			"spec_draft_tokens": "4", "spec_accept_prob": prob,
		}})
		require.NoError(t, err)
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { hs.Close(); srv.Close() })
		spec := sc.Target
		spec.URL = hs.URL
		tgt, err := StartTarget(ctx, spec, nil)
		require.NoError(t, err)
		targets[side] = tgt
	}
	files := map[string]*bytes.Buffer{"base": {}, "head": {}}
	writers := map[string]*report.BenchfmtWriter{}
	for side, b := range files {
		writers[side] = report.NewBenchfmtWriter(b)
	}
	for i := range specGateRuns {
		for _, side := range []string{"base", "head"} {
			o, err := Execute(ctx, NewPlan(sc), targets[side], Hooks{})
			require.NoError(t, err)
			require.Equal(t, 16, o.Summary.Completed, "%s run %d", side, i)
			rate, _ := o.Server.Value("spec_decode_acceptance_rate")
			tpot, _ := o.Value("median_tpot_ms")
			t.Logf("%s run %d: acceptance %.3f, median TPOT %.2f ms", side, i, rate, tpot)
			require.NoError(t, writers[side].WriteBenchfmtResult("BenchmarkScenarios/scenario=spec-gate", 1, o.BenchConfig(), o.BenchMetrics()))
		}
	}
	dir := t.TempDir()
	var args []string
	for _, side := range []string{"base", "head"} {
		path := filepath.Join(dir, side+".benchfmt")
		require.NoError(t, os.WriteFile(path, files[side].Bytes(), 0o644))
		args = append(args, path)
	}
	var stdout, stderr bytes.Buffer
	code := gate.Main(ctx, args, &stdout, &stderr)
	out := stdout.String()
	t.Logf("servegate gate base.benchfmt head.benchfmt: exit %d\n%s%s", code, out, stderr.String())
	require.Equal(t, gate.ExitRegression, code, "a drop in acceptance must fail the gate")
	assert.Regexp(t, `server-spec-accept-ratio \(gated[^\n]*\n[^\n]*\n[^\n]*FAIL: regression`, out, "the acceptance rate fails")
	assert.Regexp(t, `server metrics moved: [^\n]*server-spec-accept-ratio 0\.\d+ → 0\.\d+`, out, "the report names the acceptance drop")
	assert.Contains(t, out, "tpot-p50-sec", "the report shows the latency")
	assert.True(t, movedUp(out, "tpot-p50-sec"), "the report shows TPOT got worse:\n%s", out)
}

// movedUp reports whether the gate's report shows a significant rise of
// unit: the comparison line under its heading carries a "+" change, not
// benchstat's "~". A gated unit's heading goes on with "(gated: ...)".
func movedUp(report, unit string) bool {
	lines := strings.Split(report, "\n")
	for i, line := range lines {
		if f := strings.Fields(line); len(f) == 0 || f[0] != unit {
			continue
		}
		for _, l := range lines[i+1 : min(i+4, len(lines))] {
			if strings.HasPrefix(l, "Benchmark") {
				return strings.Contains(l, "+") && !strings.Contains(l, "~")
			}
		}
	}
	return false
}
