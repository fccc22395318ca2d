package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tenMSProfile is a simulator profile whose every step lasts 10 ms and
// that runs at most 4 sequences at once.
const tenMSProfile = `model: twin-test
max_num_seqs: 4
step_fixed_ms: 10
prefill_token_us: 0
seq_us: 0
context_token_ns: 0
`

const predictScenarioYAML = `name: predict-me
target: {kind: inproc}
dataset: {name: random, num_prompts: 8, input_len: 32, output_len: 4}
load: {max_concurrency: 1, ready_timeout: 0s}
sampling: {ignore_eos: true}
slo: {bounds: ["p99_ttft_ms <= 50"]}
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestSimPredict predicts a scenario on a 10 ms-step profile: one request
// at a time, four tokens each, so 8 requests take 0.32 simulated seconds
// and every TTFT is 10 ms.
func TestSimPredict(t *testing.T) {
	profile := writeFile(t, "p.yaml", tenMSProfile)
	sc := writeScenario(t, predictScenarioYAML)
	result := filepath.Join(t.TempDir(), "pred.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sim", "predict", "--profile", profile, "--scenario", sc, "--result-filename", result, "--save-detailed"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "Prediction in virtual time: scenario predict-me on profile "+profile+" (no server ran: 0.3 simulated s")
	assert.Contains(t, out, "Serving Benchmark Result")
	assert.Regexp(t, `Successful requests:\s+8\s*\n`, out)
	assert.Regexp(t, `Mean TTFT \(ms\):\s+10\.00\s*\n`, out)
	assert.Regexp(t, `Benchmark duration \(s\):\s+0\.32\s*\n`, out)
	assert.Contains(t, out, "Predicted SLOs of scenario predict-me:")

	data, err := os.ReadFile(result)
	require.NoError(t, err)
	var res map[string]any
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Equal(t, 8.0, res["completed"])
	assert.Equal(t, "virtual time", res["prediction"])
	assert.Equal(t, "virtual", res["target"])
	assert.Len(t, res["ttfts"], 8, "--save-detailed writes the per-request detail")
}

// TestSimPredictSLOFails: a predicted SLO that breaks exits 1 and says so.
func TestSimPredictSLOFails(t *testing.T) {
	profile := writeFile(t, "p.yaml", tenMSProfile)
	sc := writeScenario(t, regexp.MustCompile(`p99_ttft_ms <= 50`).ReplaceAllString(predictScenarioYAML, "p99_ttft_ms <= 5"))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sim", "predict", "--profile", profile, "--scenario", sc}, &stdout, &stderr)
	assert.Equal(t, 1, code, stderr.String())
	assert.Contains(t, stderr.String(), "predicted SLO not met: p99_ttft_ms = 10")
}

func TestSimPredictErrors(t *testing.T) {
	profile := writeFile(t, "p.yaml", tenMSProfile)
	sc := writeScenario(t, predictScenarioYAML)
	capacity := writeScenario(t, predictScenarioYAML+"capacity: {min_rate: 1, max_rate: 4}\n")
	sessions := writeScenario(t, sessionScenarioYAML)
	overMax := writeFile(t, "over.yaml", tenMSProfile+"num_kv_blocks: 2000000\n")
	invalid := writeFile(t, "invalid.yaml", "max_num_seqs: 0\n")
	urlTarget := writeScenario(t, "name: u\ntarget: {kind: url, url: \"http://127.0.0.1:9\"}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", urlTarget}, "scenario u: target kind url is not a simulator: no profile to predict; give --profile"},
		{[]string{"--profile", profile}, "--scenario is required"},
		{[]string{"--profile", profile, "--scenario", sc, "--save-detailed"}, "--save-detailed needs --result-filename"},
		{[]string{"--profile", "no-such-profile", "--scenario", sc}, `unknown profile "no-such-profile"`},
		{[]string{"--profile", overMax, "--scenario", sc}, "num_kv_blocks: must be <= 1048576, got 2000000"},
		{[]string{"--profile", invalid, "--scenario", sc}, "max_num_seqs: must be > 0"},
		{[]string{"--profile", profile, "--scenario", sc, "--name", "other"}, `has no scenario "other"`},
		{[]string{"--profile", profile, "--scenario", capacity}, "predict its capacity with servegate capacity --virtual"},
		{[]string{"--profile", profile, "--scenario", sessions}, "virtual time: sessions not supported yet"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"sim", "predict"}, c.args...), &stdout, &stderr)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr.String(), c.want, "%v", c.args)
	}
}

const capacityVirtualYAML = `name: virtual-capacity
target: {kind: inproc}
dataset: {name: random, num_prompts: 200, input_len: 32, output_len: 10}
load: {burstiness: inf, ready_timeout: 0s}
sampling: {ignore_eos: true}
slo: {bounds: ["p99_ttft_ms <= 100"]}
capacity: {min_rate: 5, max_rate: 200, precision: 0.05}
`

// TestCapacityVirtual predicts the capacity of the 10 ms-step profile: 4
// sequences at once, 10 steps (100 ms, a token each) a request, so at most
// 4/0.1 = 40 req/s; past it the queue, and the TTFT, grow without bound
// (200 requests at 42 req/s wait up to 0.24 s), below it a request waits
// for a step to start and one step.
//
// The same profile is given as a file (--profile) or as the scenario's own
// simulator (its target's args, no --profile).
func TestCapacityVirtual(t *testing.T) {
	profile := writeFile(t, "p.yaml", tenMSProfile)
	own := strings.Replace(capacityVirtualYAML, "target: {kind: inproc}",
		"target: {kind: sim, args: [--max-num-seqs=4, --step-fixed-ms=10, --prefill-token-us=0, --seq-us=0, --context-token-ns=0]}", 1)
	for _, c := range []struct {
		name, yaml string
		args       []string
		header     string
	}{
		{"--profile", capacityVirtualYAML, []string{"--profile", profile}, "on profile " + profile + ", in virtual time (no server ran)"},
		{"its own simulator", own, nil, "on profile of its sim target (default with its args), in virtual time (no server ran)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"capacity", "--virtual", "--scenario", writeScenario(t, c.yaml)}, c.args...)
			code := run(context.Background(), args, &stdout, &stderr)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			out := stdout.String()
			assert.Contains(t, out, "=== predicted capacity of scenario virtual-capacity "+c.header)
			m := regexp.MustCompile(`max goodput rate: ([0-9.]+) req/s`).FindStringSubmatch(out)
			require.NotNil(t, m, out)
			rate, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			assert.Greater(t, rate, 36.0, out)
			assert.LessOrEqual(t, rate, 40.0, out)
		})
	}
}

func TestCapacityVirtualErrors(t *testing.T) {
	profile := writeFile(t, "p.yaml", tenMSProfile)
	sc := writeScenario(t, capacityVirtualYAML)
	urlTarget := writeScenario(t, strings.Replace(capacityVirtualYAML, "target: {kind: inproc}", "target: {kind: url, url: \"http://127.0.0.1:9\"}", 1))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--virtual", "--scenario", urlTarget}, "target kind url is not a simulator: no profile to predict; give --profile"},
		{[]string{"--profile", profile, "--scenario", sc}, "--profile is only for --virtual"},
		{[]string{"--virtual", "--profile", profile, "--scenario", sc, "--target", "sim"}, "--target and --base-url do not apply"},
		{[]string{"--virtual", "--profile", filepath.Join(t.TempDir(), "missing.yaml"), "--scenario", sc}, "missing.yaml"},
		{[]string{"--virtual", "--profile", profile, "--scenario", sc, "--max-rate", "2000000"}, "--max-rate is at most"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"capacity"}, c.args...), &stdout, &stderr)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr.String(), c.want, "%v", c.args)
	}
}
