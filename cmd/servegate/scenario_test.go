package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
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
	scs, err := loadScenarios(path)
	require.NoError(t, err)
	require.Len(t, scs, 1)
	args, err := scenarioArgs(scs[0])
	require.NoError(t, err)
	a, plan, _, err := parseBench(args)
	require.NoError(t, err, strings.Join(args, " "))

	assert.Equal(t, "ramp", *a.Label)
	assert.Equal(t, "inproc", a.Target)
	assert.Equal(t, "org/m", a.Model)
	assert.Equal(t, tok, *a.Tokenizer)
	assert.Equal(t, "openai-chat", a.Backend)
	assert.Equal(t, "/v1/chat/completions", a.Endpoint)
	assert.Equal(t, 40, a.NumPrompts)
	assert.Equal(t, 3, a.Seed)
	assert.Equal(t, 100, a.RandomInputLen)
	assert.Equal(t, 20, a.RandomOutputLen)
	assert.Equal(t, 0.25, a.RandomRangeRatio)
	assert.True(t, math.IsInf(a.RequestRate, 1), "ramp-up leaves --request-rate at inf, as vLLM requires")
	assert.Equal(t, "linear", *a.RampUpStrategy)
	assert.Equal(t, 1, *a.RampUpStartRPS)
	assert.Equal(t, 9, *a.RampUpEndRPS)
	assert.Equal(t, 6, *a.MaxConcurrency)
	assert.Equal(t, 2, a.NumWarmups)
	assert.Equal(t, 30.0, a.RequestTimeoutSec)
	assert.Equal(t, 90.0, a.MaxDurationSec)
	assert.Equal(t, 5, a.ReadyCheckTimeoutSec)
	assert.Equal(t, 0.5, *a.Temperature)
	assert.Equal(t, 4, *a.TopK)
	assert.Equal(t, map[string]string{"x-a": "1"}, plan.Headers)
	assert.Equal(t, map[string]any{"enable_thinking": false}, a.ExtraBody["chat_template_kwargs"])
	assert.Equal(t, []string{"ttft", "e2el"}, plan.PercentileMetrics)
	assert.Equal(t, []float64{50, 99.9}, plan.Percentiles)
	assert.Equal(t, map[string]float64{"ttft": 500}, plan.Goodput)

	knobs, err := scs[0].Target.SimKnobs()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"max_num_seqs": "4"}, knobs)
}

func TestScenarioFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"--scenario", "a.yaml"}, "a.yaml", true},
		{[]string{"--model", "m", "--scenario=b.yaml"}, "b.yaml", true},
		{[]string{"--model", "m"}, "", false},
		{[]string{"--scen", "d.yaml"}, "d.yaml", true},
		{[]string{"--model", "--scenario"}, "", false},
		{[]string{"--", "--scenario", "c.yaml"}, "", false},
	} {
		got, ok := scenarioFlag(tc.args)
		assert.Equal(t, tc.ok, ok, tc.args)
		assert.Equal(t, tc.want, got, tc.args)
	}
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
  slo: {bounds: ["failed == 0", "completed == 6"]}
- name: misses
  target: {kind: sim, tokenizer: `+tok+`}
  dataset: {num_prompts: 50, input_len: 32, output_len: 8}
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
