package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const capacityScenarioYAML = `
name: quick-capacity
target: {kind: inproc, profile: instant}
dataset: {name: random, num_prompts: 20, input_len: 16, output_len: 4}
load: {burstiness: inf}
sampling: {ignore_eos: true}
slo: {bounds: ["failed == 0"]}
capacity: {min_rate: 50, max_rate: 150}
`

// TestCapacityCommand runs `servegate capacity` on the in-process simulator:
// the instant profile meets the SLO at every rate, so the search doubles
// to max_rate and says so.
func TestCapacityCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cap.yaml")
	require.NoError(t, os.WriteFile(file, []byte(capacityScenarioYAML), 0o644))
	result, bf, html := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.benchfmt"), filepath.Join(dir, "out.html")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"capacity", "--scenario", file, "--result", result, "--benchfmt", bf, "--count", "2", "--report", html}, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "step  rate req/s  goodput req/s  p99 ttft ms  margin  verdict")
	assert.Contains(t, out, "max goodput rate: 150 req/s, 3 steps")
	assert.Contains(t, out, "stopped: max_rate passed")
	assert.Equal(t, 2, strings.Count(out, "max goodput rate:"), "--count 2 searches twice")

	data, err := os.ReadFile(result)
	require.NoError(t, err)
	data = bytes.ReplaceAll(data, []byte("Infinity"), []byte("null"))
	var res map[string]any
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Equal(t, 150.0, res["max_goodput_rate"])
	assert.Equal(t, 150.0, res["request_rate"])
	assert.Equal(t, "max_rate passed", res["capacity"].(map[string]any)["stopped"])

	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Contains(t, string(page), "p99 TTFT against request rate")
	assert.Contains(t, string(page), "the step at 150.0 req/s")

	bfData, err := os.ReadFile(bf)
	require.NoError(t, err)
	assert.Contains(t, string(bfData), "Unit max-rate-req/s better=higher")
	assert.Equal(t, 2, strings.Count(string(bfData), "BenchmarkCapacity/scenario=quick-capacity 1 150 max-rate-req/s"))
}

func TestCapacityCommandErrors(t *testing.T) {
	dir := t.TempDir()
	noBounds := filepath.Join(dir, "nb.yaml")
	require.NoError(t, os.WriteFile(noBounds, []byte("name: nb\ntarget: {kind: inproc}\n"), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"capacity"}, "--scenario is required"},
		{[]string{"capacity", "--scenario", noBounds, "--count", "0"}, "--count must be at least 1"},
		{[]string{"capacity", "--scenario", noBounds}, "scenario nb: no slo.bounds"},
		{[]string{"capacity", "--scenario", noBounds, "--name", "other"}, `has no scenario "other"`},
		{[]string{"capacity", "--scenario", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"capacity", "--scenario", noBounds, "--min-rate", "-1"}, "must not be negative"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr.String(), c.want, "%v", c.args)
	}
}

// TestBenchRefusesACapacityScenario: bench runs one rate; a capacity
// scenario has none, so bench points to capacity instead of guessing.
func TestBenchRefusesACapacityScenario(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cap.yaml")
	require.NoError(t, os.WriteFile(file, []byte(capacityScenarioYAML), 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--scenario", file}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "scenario quick-capacity has a capacity block: run it with servegate capacity --scenario")
}

// TestSweepSaysItsNewName: the command's old name fails with status 2 and
// names the new one.
func TestSweepSaysItsNewName(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sweep", "--scenario", "x.yaml"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "servegate capacity")
	assert.Empty(t, stdout.String())
}
