package benchtest

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/sim"
)

// useOut points the outputs at a fresh directory for one test.
func useOut(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(scenario.EnvOut, dir)
	prev := out
	out = &outputs{}
	t.Cleanup(func() {
		for _, f := range out.files {
			f.Close()
		}
		out = prev
	})
	return dir
}

func parse(t *testing.T, src string) *scenario.Scenario {
	t.Helper()
	scs, err := scenario.Parse("inline.yaml", []byte(src))
	require.NoError(t, err)
	return scs[0]
}

const tiny = `
name: tiny
target: {kind: inproc, profile: instant}
backend: openai-chat
dataset: {name: random, num_prompts: 12, input_len: 32, output_len: 8, seed: 3}
load: {request_rate: 200, max_duration: 1m}
# The harness checks are off: these tests check the outputs, which a
# loaded machine must not turn into an invalid run (health_test.go
# checks the harness).
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
slo:
  goodput: {ttft: 10000}
  bounds:
    - failed == 0
    - completed == 12
    - p99_ttft_ms <= 10000
    - goodput_ratio >= 1
`

func readBenchfmt(t *testing.T, path string) ([]*benchfmt.Result, map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := benchfmt.NewReader(f, path)
	var results []*benchfmt.Result
	units := map[string]string{}
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("benchfmt syntax error: %v", rec)
		case *benchfmt.Result:
			results = append(results, rec.Clone())
		case *benchfmt.UnitMetadata:
			units[rec.Unit] = rec.Value
		}
	}
	require.NoError(t, r.Err())
	return results, units
}

// TestRunInproc runs a scenario end to end against the in-process
// simulator and checks every output: verdicts, result JSON, benchfmt line
// and SLO Markdown.
func TestRunInproc(t *testing.T) {
	dir := useOut(t)
	t.Setenv(scenario.EnvTarget, "")
	sc := parse(t, tiny)
	Run(t, sc)

	var res map[string]any
	data, err := os.ReadFile(filepath.Join(dir, "tiny.test.1.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Equal(t, 12.0, res["completed"])
	assert.Equal(t, "openai-chat", res["backend"])
	assert.Equal(t, sc.SHA, res["scenario-sha"])
	assert.Equal(t, "inproc", res["target"])
	assert.Len(t, res["ttfts"], 12, "per-request detail")
	assert.Len(t, res["start_times"], 12)

	results, units := readBenchfmt(t, filepath.Join(dir, "test.benchfmt"))
	require.Len(t, results, 1)
	r := results[0]
	assert.Equal(t, benchName("TestRunInproc/scenario=tiny"), r.Name.String())
	assert.Equal(t, "inproc", r.GetConfig("target"))
	assert.Equal(t, "servegate/sim-instant", r.GetConfig("model"))
	assert.Equal(t, "openai-chat", r.GetConfig("backend"))
	assert.Equal(t, sc.SHA, r.GetConfig("scenario-sha"))
	ttft, ok := r.Value("ttft-p99-sec")
	require.True(t, ok)
	assert.InDelta(t, res["p99_ttft_ms"].(float64)/1000, ttft, 1e-12, "benchfmt holds the result JSON's number, in seconds")
	rate, ok := r.Value("goodput-req/s")
	require.True(t, ok)
	assert.Greater(t, rate, 0.0)
	assert.Equal(t, "lower", units["ttft-p99-sec"])
	assert.Equal(t, "higher", units["goodput-req/s"])

	md, err := os.ReadFile(filepath.Join(dir, "slo.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "### TestRunInproc/scenario=tiny")
	assert.Contains(t, string(md), "| `completed` | == 12 | 12 | PASS |")
}

// TestRunURL runs a scenario against an already running server chosen by
// the environment (SERVEGATE_URL), the way CI points scenarios at a server
// it started itself.
func TestRunURL(t *testing.T) {
	dir := useOut(t)
	srv, err := sim.New(sim.Config{Profile: "instant"})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	t.Setenv(scenario.EnvTarget, "")
	t.Setenv(scenario.EnvURL, hs.URL)
	t.Setenv(scenario.EnvModel, "") // found through /v1/models
	Run(t, parse(t, tiny))

	results, _ := readBenchfmt(t, filepath.Join(dir, "test.benchfmt"))
	require.Len(t, results, 1)
	assert.Equal(t, "url", results[0].GetConfig("target"))
	assert.Equal(t, "servegate/sim-instant", results[0].GetConfig("model"))
}

// TestBenchReportsMetrics runs a scenario as a benchmark and checks what
// it reports: benchstat units, no ns/op, and one bench.benchfmt line per
// iteration.
func TestBenchReportsMetrics(t *testing.T) {
	dir := useOut(t)
	t.Setenv(scenario.EnvTarget, "")
	sc := parse(t, tiny)
	var n int
	res := testing.Benchmark(func(b *testing.B) {
		runBench(b, b, sc)
		n += b.N
	})
	require.Positive(t, res.N, "the benchmark ran")
	for _, unit := range []string{"ttft-p99-sec", "ttft-mean-sec", "tpot-p50-sec", "itl-p99-sec", "e2el-p50-sec", "req/s", "tok/s", "goodput-req/s", "fail-ratio"} {
		assert.Contains(t, res.Extra, unit)
	}
	assert.Zero(t, res.Extra["fail-ratio"])
	assert.Equal(t, 0.0, res.Extra["ns/op"], "ns/op suppressed")
	results, _ := readBenchfmt(t, filepath.Join(dir, "bench.benchfmt"))
	assert.Len(t, results, n, "one benchfmt line per iteration")
}
