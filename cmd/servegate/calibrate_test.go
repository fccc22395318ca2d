package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
)

// smallResult writes a result file of a few requests: detailed or not,
// against the target kind given.
func smallResult(tb testing.TB, dir, name, target string, detailed bool) string {
	tb.Helper()
	var recs []metrics.Record
	for i := range 3 {
		recs = append(recs, metrics.Record{Start: time.Duration(i) * 100 * time.Millisecond, TTFT: 20 * time.Millisecond,
			ITL: []time.Duration{10 * time.Millisecond}, Latency: 30 * time.Millisecond, PromptLen: 32, OutputTokens: 2, Success: true})
	}
	info := metrics.RunInfo{Backend: "openai-chat", ModelID: "acme/model", NumPrompts: 3, Extras: true, Metadata: [][2]string{{"target", target}}}
	path := filepath.Join(dir, name)
	require.NoError(tb, os.WriteFile(path, metrics.Summarize(recs, time.Second, metrics.Options{}).ResultJSON(info, detailed), 0o644))
	return path
}

// TestCalibrateCommandRefuses: bad input and bad flags end the command
// with an error naming the file or flag, and no profile is written.
func TestCalibrateCommandRefuses(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "twin.yaml")
	summary := smallResult(t, dir, "summary.json", "vllm", false)
	small := smallResult(t, dir, "small.json", "vllm", true)
	twinRun := smallResult(t, dir, "twin.json", "inproc", true)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no files", []string{"--out", out}, 2, []string{"want one or more result files"}},
		{"no output", []string{small}, 2, []string{"required: --output"}},
		{"over a limit", []string{"--out", out, "--max-num-seqs", "100000000", small}, 2, []string{"--max-num-seqs 100000000 is over the maximum 65536"}},
		{"negative", []string{"--out", out, "--block-size", "-1", small}, 2, []string{"--block-size must be positive"}},
		{"evals over", []string{"--out", out, "--max-evals", "1000000", small}, 2, []string{"--max-evals 1000000 is over the maximum 100000"}},
		{"missing file", []string{"--out", out, filepath.Join(dir, "nope.json")}, 1, []string{"nope.json"}},
		{"no detail", []string{"--out", out, summary}, 1, []string{summary, "--save-detailed"}},
		{"too small", []string{"--out", out, small}, 1, []string{small, "too small to fit"}},
		{"a twin's run", []string{"--out", out, twinRun}, 1, []string{twinRun, "simulator, not a server"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"sim", "calibrate"}, tc.args...), &stdout, &stderr)
			assert.Equal(t, tc.code, code, stderr.String())
			for _, w := range tc.want {
				assert.Contains(t, stderr.String(), w)
			}
			assert.NoFileExists(t, out, "no profile written")
		})
	}
}

func TestCalibrateHelp(t *testing.T) {
	var stdout bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"sim", "calibrate", "--help"}, &stdout, &bytes.Buffer{}))
	for _, w := range []string{"--output", "--force", "--max-num-seqs", "--max-evals", "RESULT.json"} {
		assert.Contains(t, stdout.String(), w)
	}
}

// TestDocsListEveryCalibrateLimit keeps the limits table of
// docs/scenarios.md true for the calibrate flags.
func TestDocsListEveryCalibrateLimit(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	require.NoError(t, err)
	for _, c := range calibrateLimits(&calibrateArgs{}) {
		assert.Contains(t, string(doc), "| "+c.Max+" | `servegate sim calibrate --"+c.Name+"` |", "docs/scenarios.md does not list the limit of --%s", c.Name)
	}
}
