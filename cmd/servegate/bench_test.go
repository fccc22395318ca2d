package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

func ptr[T any](v T) *T { return &v }

func TestResultPath(t *testing.T) {
	const date = "20261129-183000"
	cases := []struct {
		name string
		a    benchArgs
		want string
	}{
		{"defaults", benchArgs{Backend: "openai", Model: "meta-llama/Llama-3-8B", RequestRate: inf},
			"openai-infqps-Llama-3-8B-20261129-183000.json"},
		{"rate and concurrency", benchArgs{Backend: "vllm", Model: "m", RequestRate: 2.5, MaxConcurrency: ptr(8)},
			"vllm-2.5qps-concurrency8-m-20261129-183000.json"},
		{"integral rate keeps .0", benchArgs{Backend: "openai", Model: "org/m", RequestRate: 10, Label: ptr("nightly")},
			"nightly-10.0qps-m-20261129-183000.json"},
		{"ramp-up", benchArgs{Backend: "openai-chat", Model: "m", RequestRate: inf, RampUpStrategy: ptr("linear"),
			RampUpStartRPS: ptr(1), RampUpEndRPS: ptr(20), MaxConcurrency: ptr(4)},
			"openai-chat-ramp-up-linear-1qps-20qps-concurrency4-m-20261129-183000.json"},
		{"result filename and dir", benchArgs{Backend: "openai", Model: "m", RequestRate: inf,
			ResultFilename: ptr("r.json"), ResultDir: ptr("out/x")}, filepath.Join("out/x", "r.json")},
		{"empty label falls back to backend", benchArgs{Backend: "openai", Model: "m", RequestRate: inf, Label: ptr(""), ResultDir: ptr("d")},
			filepath.Join("d", "openai-infqps-m-20261129-183000.json")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info := flagsPlan(&tc.a, &benchPlan{}, io.Discard).RunInfo()
			info.Date = date
			assert.Equal(t, tc.want, resultPath(&tc.a, info))
		})
	}
}

// benchInproc runs servegate bench against the in-process simulator with
// the real Llama-3 tokenizer and returns stdout.
func benchInproc(t *testing.T, extra ...string) string {
	t.Helper()
	tok := fixtures.Tokenizer(t, fixtures.Llama3)
	args := append([]string{"bench", "--target", "inproc", "--model", "meta-llama/Meta-Llama-3-8B-Instruct",
		"--tokenizer", tok, "--num-prompts", "24", "--random-input-len", "64", "--random-output-len", "12",
		"--request-rate", "200", "--max-concurrency", "8", "--seed", "7"}, extra...)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr.String(), stdout.String())
	return stdout.String()
}

// jsonKeys returns the top-level keys of a JSON object in file order.
func jsonKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

// TestBenchInprocEndToEnd runs the whole pipeline with no Docker and checks
// the console block, the vLLM-named detailed result file with vLLM's keys
// in vLLM's order, and the HTML report.
func TestBenchInprocEndToEnd(t *testing.T) {
	dir := t.TempDir()
	out := benchInproc(t, "--save-result", "--save-detailed", "--result-dir", dir,
		"--label", "ci", "--metadata", "tp=1", "gpu=none", "--goodput", "ttft:5000", "e2el:60000",
		"--report", filepath.Join(dir, "report.html"), "--no-plot")

	assert.Contains(t, out, "Started inproc target at http://127.0.0.1:")
	assert.Contains(t, out, "Traffic request rate: 200.0\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: 8\n")
	assert.NotContains(t, out, "Output tokens per second", "--no-plot")
	start := strings.Index(out, "============ Serving Benchmark Result")
	require.GreaterOrEqual(t, start, 0, out)
	block := out[start:]
	block = block[:strings.Index(block, "\n"+strings.Repeat("=", 50)+"\n")]
	labels := regexp.MustCompile(`(?m)^([A-Z][^:]*:)\s`).FindAllStringSubmatch(block, -1)
	var got []string
	for _, l := range labels {
		got = append(got, l[1])
	}
	assert.Equal(t, []string{
		"Successful requests:", "Failed requests:", "Maximum request concurrency:", "Request rate configured (RPS):",
		"Benchmark duration (s):", "Total input tokens:", "Total generated tokens:", "Request throughput (req/s):",
		"Request goodput (req/s):", "Output token throughput (tok/s):", "Peak output token throughput (tok/s):",
		"Peak concurrent requests:", "Total token throughput (tok/s):",
		"Mean TTFT (ms):", "Median TTFT (ms):", "P99 TTFT (ms):",
		"Mean TPOT (ms):", "Median TPOT (ms):", "P99 TPOT (ms):",
		"Mean ITL (ms):", "Median ITL (ms):", "P99 ITL (ms):",
	}, got)
	assert.Contains(t, block, "Successful requests:                     24        \n")

	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Regexp(t, `^ci-200\.0qps-concurrency8-Meta-Llama-3-8B-Instruct-\d{8}-\d{6}\.json$`, filepath.Base(files[0]))
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	// vllm bench serve's keys for the same flags, in its order; servegate
	// adds start_times and latencies to the detailed file.
	assert.Equal(t, []string{
		"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
		"tp", "gpu", "request_rate", "burstiness", "max_concurrency",
		"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
		"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
		"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors",
		"max_output_tokens_per_s", "max_concurrent_requests", "start_times", "latencies",
		"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
		"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
		"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms",
	}, jsonKeys(t, data))
	var res struct {
		Label          string      `json:"label"`
		Tp             string      `json:"tp"`
		RequestRate    float64     `json:"request_rate"`
		MaxConcurrency int         `json:"max_concurrency"`
		Completed      int         `json:"completed"`
		Goodput        float64     `json:"request_goodput"`
		TTFTs          []float64   `json:"ttfts"`
		ITLs           [][]float64 `json:"itls"`
		OutputLens     []int       `json:"output_lens"`
		Errors         []string    `json:"errors"`
		StartTimes     []float64   `json:"start_times"`
	}
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Equal(t, "ci", res.Label)
	assert.Equal(t, "1", res.Tp)
	assert.Equal(t, 200.0, res.RequestRate)
	assert.Equal(t, 8, res.MaxConcurrency)
	assert.Equal(t, 24, res.Completed)
	assert.Greater(t, res.Goodput, 0.0)
	require.Len(t, res.TTFTs, 24)
	require.Len(t, res.ITLs, 24)
	require.Len(t, res.StartTimes, 24)
	for i := range res.TTFTs {
		assert.Greater(t, res.TTFTs[i], 0.0)
		assert.Equal(t, 12, res.OutputLens[i], "random datasets ignore EOS, so every request runs to its length")
		assert.Len(t, res.ITLs[i], 11)
		assert.Empty(t, res.Errors[i])
	}

	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	for _, want := range []string{"servegate bench: meta-llama/Meta-Llama-3-8B-Instruct on inproc", "Schedule lag", "No request failed.", "goodput SLOs"} {
		assert.Contains(t, string(page), want)
	}
}

func TestBenchAppendResultAndPlots(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.json")
	for i := 0; i < 2; i++ {
		out := benchInproc(t, "--append-result", "--result-filename", path, "--num-prompts", "6")
		assert.Contains(t, out, "Output tokens per second")
		assert.Contains(t, out, "Concurrent requests per second")
		assert.Contains(t, out, "Saved result: "+path)
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	require.Len(t, lines, 2, "vLLM appends one JSON object per line")
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		assert.Equal(t, 6.0, m["completed"])
		assert.NotContains(t, m, "ttfts", "per-request arrays only with --save-detailed")
	}
}

func TestBenchUnreachableServer(t *testing.T) {
	tok := fixtures.Tokenizer(t, fixtures.Llama3)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--model", "m", "--tokenizer", tok, "--num-prompts", "2",
		"--random-input-len", "16", "--random-output-len", "4", "--base-url", "http://127.0.0.1:1",
		"--ready-check-timeout-sec", "1"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "servegate bench: ")
	assert.NotContains(t, stdout.String(), "Serving Benchmark Result")
}

func TestBenchMissingTokenizer(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--model", "org/not-cached", "--base-url", "http://127.0.0.1:1"}, &bytes.Buffer{}, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "load tokenizer org/not-cached")
}

// A simulator target with no --tokenizer takes the bundled Llama-3
// tokenizer when the model's is not cached, says so, and downloads nothing.
func TestBenchSimulatorBundledTokenizer(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1") // a download attempt would fail loudly
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--model", "servegate/sim", "--target", "inproc",
		"--num-prompts", "3", "--random-input-len", "16", "--random-output-len", "4", "--no-plot"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "uses the bundled Llama-3 tokenizer")
	assert.Contains(t, stdout.String(), "Successful requests:                     3 ")
}

// TestBenchResultKeysMatchVLLM runs servegate bench with the flags that
// produced a real vllm bench serve 0.13.0 result file
// (internal/report/testdata/vllm-0.13/record.sh) and expects the same
// file name pattern and the same keys in the same order, plus servegate's
// start_times and latencies after max_concurrent_requests.
func TestBenchResultKeysMatchVLLM(t *testing.T) {
	vllmFile, err := os.ReadFile(filepath.Join("..", "..", "internal", "report", "testdata", "vllm-0.13", "result.json"))
	require.NoError(t, err)
	var want []string
	for _, k := range jsonKeys(t, vllmFile) {
		want = append(want, k)
		if k == "max_concurrent_requests" {
			want = append(want, "start_times", "latencies")
		}
	}
	dir := t.TempDir()
	benchInproc(t, "--model", "servegate/sim", "--random-input-len", "64", "--random-output-len", "8",
		"--num-prompts", "10", "--request-rate", "50", "--max-concurrency", "8", "--save-result", "--save-detailed",
		"--result-dir", dir, "--label", "ci", "--metadata", "tp=1", "gpu=none", "--goodput", "ttft:5000", "e2el:60000",
		"--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99.9", "--seed", "7", "--no-plot")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	// vLLM named its file ci-50.0qps-concurrency8-sim-20261129-184223.json.
	assert.Regexp(t, `^ci-50\.0qps-concurrency8-sim-\d{8}-\d{6}\.json$`, filepath.Base(files[0]))
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Equal(t, want, jsonKeys(t, data))
}

func TestBenchMaxDuration(t *testing.T) {
	tok := fixtures.Tokenizer(t, fixtures.Llama3)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--target", "inproc", "--model", "m", "--tokenizer", tok,
		"--num-prompts", "100", "--random-input-len", "16", "--random-output-len", "4", "--request-rate", "10",
		"--max-duration-sec", "1", "--no-plot"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stderr.String(), "warning: run stopped early: maximum duration reached")
	m := regexp.MustCompile(`Successful requests:\s+(\d+)`).FindStringSubmatch(stdout.String())
	require.NotNil(t, m, stdout.String())
	assert.NotEqual(t, "100", m[1], "100 requests at 10 req/s cannot all finish in 1 s")
}

// TestBenchDatasetErrors: the dataset's own validation (vLLM's, in vLLM's
// order) reaches the user before any target starts.
func TestBenchDatasetErrors(t *testing.T) {
	tok := fixtures.Tokenizer(t, fixtures.Llama3)
	cases := []struct{ args, want string }{
		{"--random-range-ratio 1.5", "input length 1024 is too small"},
		{"--random-input-len 1", "input length 1 is too small"},
		{"--dataset-name sharegpt", "load sharegpt dataset: no dataset path"},
		{"--dataset-name custom --dataset-path /nonexistent.jsonl", "/nonexistent.jsonl"},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"bench", "--target", "inproc", "--model", "m", "--tokenizer", tok}, strings.Fields(tc.args)...)
			assert.Equal(t, 1, run(context.Background(), args, &stdout, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stdout.String(), "Started inproc target", "the dataset is checked first")
		})
	}
}
