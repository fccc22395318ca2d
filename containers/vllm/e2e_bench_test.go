package vllm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
)

// The side-by-side run (e2e/run.sh) sets these: the server both tools hit,
// the directory for the dataset and both result files, and the workload.
const (
	urlEnv     = "SERVEGATE_E2E_VLLM_URL"
	outEnv     = "SERVEGATE_E2E_OUT"
	backendEnv = "SERVEGATE_E2E_BACKEND"
)

// benchSetup reads the side-by-side settings or skips.
func benchSetup(t *testing.T) (base, out, backend string) {
	t.Helper()
	requireE2E(t)
	base, out = os.Getenv(urlEnv), os.Getenv(outEnv)
	if base == "" || out == "" {
		t.Skipf("side-by-side with vllm bench serve: set %s and %s (e2e/run.sh does)", urlEnv, outEnv)
	}
	backend = os.Getenv(backendEnv)
	if backend == "" {
		backend = client.BackendVLLM
	}
	return base, out, backend
}

// benchSamples makes the side-by-side dataset and checks it against
// dataset.jsonl, the file vllm bench serve reads, writing it when missing.
func benchSamples(t *testing.T, out string) []dataset.Sample {
	t.Helper()
	samples := randomSamples(llama3(t), envInt(t, "SERVEGATE_E2E_NUM_PROMPTS", 50),
		envInt(t, "SERVEGATE_E2E_INPUT_LEN", 128), envInt(t, "SERVEGATE_E2E_OUTPUT_LEN", 32), 0)
	want, err := jsonl(samples)
	require.NoError(t, err)
	path := filepath.Join(out, "dataset.jsonl")
	got, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, os.WriteFile(path, want, 0o644))
		return samples
	}
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s was made with other settings: remove it", path)
	return samples
}

// TestE2EDataset writes dataset.jsonl for vllm bench serve.
func TestE2EDataset(t *testing.T) {
	_, out, _ := benchSetup(t)
	benchSamples(t, out)
}

// TestE2EBench runs the engine against a running vLLM on the dataset that
// vllm bench serve also gets (dataset.jsonl), and saves the summary as
// vLLM's result JSON (servegate-<backend>.json).
func TestE2EBench(t *testing.T) {
	base, out, backend := benchSetup(t)
	tok := llama3(t)
	samples := benchSamples(t, out)
	n := len(samples)
	rate := float64(envInt(t, "SERVEGATE_E2E_RATE", 0))
	if rate == 0 {
		rate = math.Inf(1)
	}
	cfg := engine.Config{
		BaseURL: base, Backend: backend, Model: "tiny-llama", Tokenizer: tok,
		RequestRate: rate, Seed: 0, IgnoreEOS: true,
		MaxConcurrency: envInt(t, "SERVEGATE_E2E_MAX_CONCURRENCY", 0),
		ReadyTimeout:   10 * time.Minute, RequestTimeout: 10 * time.Minute,
	}
	res, err := engine.Run(context.Background(), cfg, samples)
	require.NoError(t, err)
	opts := metrics.Options{PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el"}, Percentiles: []float64{50, 99}}
	sum := metrics.Summarize(res.Records, res.Duration, opts)
	assert.Zero(t, sum.Failed, "failed requests")
	for i, r := range res.Records {
		assert.Equal(t, samples[i].OutputLen, r.OutputTokens, "request %d: %s", i, r.Error)
	}
	info := metrics.RunInfo{
		Date: time.Now().Format("20060102-150405"), Backend: backend, ModelID: "tiny-llama",
		TokenizerID: "Meta-Llama-3-8B-Instruct", NumPrompts: n, RequestRate: rate, Burstiness: 1,
		MaxConcurrency: cfg.MaxConcurrency,
	}
	require.NoError(t, os.WriteFile(filepath.Join(out, "servegate-"+backend+".json"), sum.ResultJSON(info, false), 0o644))
}

// compared are the result-JSON keys of the side-by-side table.
var compared = []string{
	"completed", "failed", "total_input_tokens", "total_output_tokens", "duration",
	"request_throughput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
	"mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
	"mean_itl_ms", "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms",
}

// TestE2ECompare reads vllm bench serve's result (vllm-<backend>.json) and
// ours (servegate-<backend>.json) for the same server and dataset, checks
// that both sent the same requests and got the same tokens, and writes the
// side-by-side table to compare-<backend>.md.
func TestE2ECompare(t *testing.T) {
	_, out, backend := benchSetup(t)
	ref := readResult(t, filepath.Join(out, "vllm-"+backend+".json"))
	ours := readResult(t, filepath.Join(out, "servegate-"+backend+".json"))
	for _, k := range []string{"completed", "failed", "total_input_tokens", "total_output_tokens"} {
		assert.Equal(t, ref[k], ours[k], k)
	}
	assert.Zero(t, ref["failed"])
	var b strings.Builder
	fmt.Fprintf(&b, "| metric (%s) | vllm bench serve | servegate | servegate / vllm |\n|---|---:|---:|---:|\n", backend)
	for _, k := range compared {
		r, o := ref[k], ours[k]
		ratio := "n/a"
		if r != 0 {
			ratio = fmt.Sprintf("%.3f", o/r)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %s |\n", k, r, o, ratio)
	}
	t.Log("\n" + b.String())
	require.NoError(t, os.WriteFile(filepath.Join(out, "compare-"+backend+".md"), []byte(b.String()), 0o644))
}

// readResult reads the numeric keys of a vLLM result JSON file.
func readResult(t *testing.T, path string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw), path)
	out := map[string]float64{}
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out
}
