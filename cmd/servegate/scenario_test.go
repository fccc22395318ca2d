package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest"
	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/pipeline"
)

func writeScenario(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	return path
}

func TestScenarioArgs(t *testing.T) {
	tok := fixtures.Tokenizer(t, fixtures.Llama3)
	path := writeScenario(t, `
name: ramp
target: {kind: inproc, model: org/m, tokenizer: `+tok+`, profile: gpu-8b, args: ["--max_num_seqs=4"]}
backend: openai-chat
dataset: {name: random, num_prompts: 40, input_len: 100, output_len: 20, range_ratio: 0.25, seed: 3}
load:
  ramp_up: {strategy: linear, start_rps: 1, end_rps: 9}
  max_concurrency: 6
  warmups: 2
  request_timeout: 30s
  ready_timeout: 5s
  max_duration: 90s
sampling: {temperature: 0.5, top_k: 4}
headers: {x-a: "1"}
extra_body: {chat_template_kwargs: {enable_thinking: false}}
metrics: {percentile_metrics: [ttft, e2el], percentiles: [50, 99.9]}
slo:
  goodput: {ttft: 500}
  bounds: ["failed == 0"]
`)
	plan := scenarioPlanOf(t, path)
	e, d := plan.Engine, plan.Dataset

	assert.Equal(t, "ramp", plan.Name)
	assert.Equal(t, "ramp", plan.Info.Label)
	assert.Equal(t, "inproc", plan.Target.Kind)
	assert.Equal(t, "org/m", plan.Target.Model)
	assert.Equal(t, "gpu-8b", plan.Target.Profile)
	assert.Equal(t, tok, plan.Tokenizer)
	assert.False(t, plan.Hub.Download, "scenarios never download")
	assert.Equal(t, "openai-chat", e.Backend)
	assert.Equal(t, "/v1/chat/completions", e.Endpoint)
	assert.Equal(t, 40, d.NumPrompts)
	assert.Equal(t, int64(3), d.Seed)
	assert.Equal(t, 100, d.Random.InputLen)
	assert.Equal(t, 20, d.Random.OutputLen)
	assert.Equal(t, 0.25, d.Random.RangeRatio)
	assert.True(t, math.IsInf(e.RequestRate, 1), "ramp-up leaves the request rate at inf, as vLLM requires")
	require.NotNil(t, e.RampUp)
	assert.Equal(t, "linear", e.RampUp.Strategy)
	assert.Equal(t, 1.0, e.RampUp.StartRPS)
	assert.Equal(t, 9.0, e.RampUp.EndRPS)
	assert.Equal(t, 6, e.MaxConcurrency)
	assert.Equal(t, 2, e.NumWarmups)
	assert.Equal(t, 30*time.Second, e.RequestTimeout)
	assert.Equal(t, 90*time.Second, e.MaxDuration)
	assert.Equal(t, 5*time.Second, e.ReadyTimeout)
	assert.Equal(t, 0.5, *e.Sampling.Temperature)
	assert.Equal(t, 4, *e.Sampling.TopK)
	assert.Equal(t, map[string]string{"x-a": "1"}, e.Headers)
	assert.Equal(t, map[string]any{"enable_thinking": false}, e.ExtraBody["chat_template_kwargs"])
	assert.Equal(t, []string{"ttft", "e2el"}, plan.Summary.PercentileMetrics)
	assert.Equal(t, []float64{50, 99.9}, plan.Summary.Percentiles)
	assert.Equal(t, map[string]float64{"ttft": 500}, plan.Summary.Goodput)
	assert.Equal(t, "ramp-", e.RequestIDPrefix)

	knobs, err := plan.Target.SimKnobs()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"max_num_seqs": "4"}, knobs)
}

// scenarioPlanOf plans the one scenario of a file as `servegate bench
// --scenario FILE extra...` does.
func scenarioPlanOf(t *testing.T, path string, extra ...string) *pipeline.Plan {
	t.Helper()
	a, fp, p, err := parseBench(append([]string{"--scenario", path}, extra...))
	require.NoError(t, err)
	plans, err := scenarioPlans(*a.Scenario, a, fp, p)
	require.NoError(t, err)
	require.Len(t, plans, 1)
	return plans[0]
}

// The two front doors build the same Plan from the same file: no flag
// default leaks into a scenario run, and flags given do apply.
func TestScenarioDoorsAgree(t *testing.T) {
	path := writeScenario(t, `
name: same
target: {kind: inproc, profile: gpu-8b}
backend: openai-chat
dataset: {name: random, num_prompts: 12, input_len: 48, output_len: 6, seed: 5}
load: {request_rate: 50, burstiness: 0.5, max_concurrency: 4, ready_timeout: 1500ms}
slo: {bounds: ["failed == 0"]}
`)
	scs, err := scenario.LoadFile(path)
	require.NoError(t, err)
	sc, err := scs[0].Override(scenario.EnvFromOS())
	require.NoError(t, err)
	assert.Equal(t, pipeline.NewPlan(sc), scenarioPlanOf(t, path))
	assert.Equal(t, 1500*time.Millisecond, scenarioPlanOf(t, path).Engine.ReadyTimeout, "sub-second timeouts are kept")

	over := scenarioPlanOf(t, path, "--num-prompts", "7", "--request-rate", "9", "--label", "x", "--tokenizer", "bert")
	want := pipeline.NewPlan(sc)
	want.Dataset.NumPrompts, want.Info.NumPrompts = 7, 7
	want.Engine.RequestRate = 9
	want.Info.Label = "x"
	want.Tokenizer, want.Info.TokenizerID, want.Hub, want.Target.Tokenizer = "bert", "bert", cliHub(), "bert"
	assert.Equal(t, want, over)
}

// TestBenchScenarioInproc runs a scenario file end to end: explicit flags
// override its keys, its SLO table is printed, and a broken bound fails
// the command.
func TestBenchScenarioInproc(t *testing.T) {
	tok := fixtures.Tokenizer(t, fixtures.Llama3)
	path := writeScenario(t, `
- name: meets
  target: {kind: sim, tokenizer: `+tok+`}
  dataset: {num_prompts: 50, input_len: 32, output_len: 8}
  load: {request_rate: 100}
  harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
  slo: {bounds: ["failed == 0", "completed == 6"]}
- name: misses
  target: {kind: sim, tokenizer: `+tok+`}
  dataset: {num_prompts: 50, input_len: 32, output_len: 8}
  harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
  slo: {bounds: ["p99_ttft_ms <= 0.000001"]}
`)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--scenario", path, "--target", "inproc", "--num-prompts", "6", "--no-plot"}, &stdout, &stderr)
	out := stdout.String()
	assert.Equal(t, 1, code, "the second scenario misses its SLO\n%s\n%s", out, stderr.String())
	assert.Contains(t, out, "=== scenario meets")
	assert.Contains(t, out, "=== scenario misses")
	assert.Contains(t, out, "Successful requests:                     6 ")
	assert.Contains(t, out, "Request rate configured (RPS):           100.00")
	assert.Regexp(t, `completed\s+== 6\s+6\s+PASS`, out)
	assert.Regexp(t, `p99_ttft_ms\s+<= 1e-06\s+\S+\s+FAIL`, out)
	assert.Contains(t, stderr.String(), "scenario misses: SLO not met: p99_ttft_ms = ")
	assert.NotContains(t, stderr.String(), "scenario meets")
}

// TestBenchScenarioInvalidRun: a run past a harness limit exits 2 as an
// invalid run, and never reports the server's SLOs as violated.
func TestBenchScenarioInvalidRun(t *testing.T) {
	tok := fixtures.Tokenizer(t, fixtures.Llama3)
	path := writeScenario(t, `
name: behind
target: {kind: inproc, tokenizer: `+tok+`}
dataset: {num_prompts: 6, input_len: 32, output_len: 8}
load: {request_rate: 100}
harness: {max_lateness_p99: 1ns}
slo: {bounds: ["p99_ttft_ms <= 0.000001"]}
`)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--scenario", path, "--no-plot"}, &stdout, &stderr)
	assert.Equal(t, 2, code, "%s\n%s", stdout.String(), stderr.String())
	assert.Contains(t, stderr.String(), "servegate bench: scenario behind: invalid run: load generator fell behind: p99_lateness_ms = ")
	assert.NotContains(t, stderr.String(), "SLO not met")
	assert.Equal(t, scenario.DefaultReruns, strings.Count(stderr.String(), "running it again"), "an invalid run is run again harness.reruns times")
	assert.Regexp(t, `p99_ttft_ms\s+<= 1e-06\s+\S+\s+VOID`, stdout.String())
	assert.Contains(t, stdout.String(), "load generator: lateness p99 ")
}

func TestBenchScenarioErrors(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--scenario", filepath.Join(t.TempDir(), "missing.yaml")}, &bytes.Buffer{}, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "missing.yaml")

	path := writeScenario(t, "name: bad\nload: {request_rate: fast}\n")
	stderr.Reset()
	code = run(context.Background(), []string{"bench", "--scenario", path}, &bytes.Buffer{}, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "s.yaml:2")
}

// Both doors run the same file against the in-process simulator and write
// result JSON with the same keys and the same request ids.
func TestScenarioDoorsSameResult(t *testing.T) {
	path := writeScenario(t, `
name: doors
target: {kind: inproc}
dataset: {num_prompts: 8, input_len: 32, output_len: 4, seed: 2}
load: {request_rate: 200, max_concurrency: 4}
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
slo: {bounds: ["failed == 0"]}
`)
	outDir := t.TempDir()
	t.Setenv(scenario.EnvOut, outDir)
	scs, err := scenario.LoadFile(path)
	require.NoError(t, err)
	benchtest.Run(t, scs[0])
	viaTest, err := os.ReadFile(filepath.Join(outDir, "doors.test.1.json"))
	require.NoError(t, err)

	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--scenario", path, "--save-result", "--save-detailed",
		"--result-filename", "cli.json", "--result-dir", dir, "--no-plot"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	viaCLI, err := os.ReadFile(filepath.Join(dir, "cli.json"))
	require.NoError(t, err)

	assert.Equal(t, jsonKeys(t, viaTest), jsonKeys(t, viaCLI))
	ids := func(data []byte) []string {
		var r struct {
			IDs []string `json:"request_ids"`
		}
		require.NoError(t, json.Unmarshal(data, &r))
		return r.IDs
	}
	require.Len(t, ids(viaTest), 8)
	assert.Equal(t, "doors-0", ids(viaTest)[0])
	assert.ElementsMatch(t, ids(viaTest), ids(viaCLI))
}
