package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportResummarises saves a detailed run, then summarises it again
// with other percentiles and goodput, and renders its HTML report.
func TestReportResummarises(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "run.json")
	out := benchInproc(t, "--save-result", "--save-detailed", "--result-filename", saved, "--no-plot")
	first := regexp.MustCompile(`Mean TTFT \(ms\):\s+(\S+)`).FindStringSubmatch(out)
	require.NotNil(t, first, out)

	html := filepath.Join(dir, "again.html")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"report", saved, "--percentile-metrics", "ttft,e2el",
		"--metric-percentiles", "50,99", "--goodput", "e2el:60000", "--report", html}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	again := stdout.String()
	assert.Contains(t, again, "Output tokens per second")
	assert.Contains(t, again, "Successful requests:                     24 ")
	assert.Contains(t, again, "Maximum request concurrency:             8 ")
	assert.Contains(t, again, "Request rate configured (RPS):           200.00")
	assert.Contains(t, again, "Request goodput (req/s):")
	assert.Contains(t, again, "P50 E2EL (ms):")
	assert.NotContains(t, again, "Inter-token Latency")
	assert.Contains(t, again, "Mean TTFT (ms):                          "+first[1]+" ", "the same records give the same numbers")
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Contains(t, string(page), "servegate report: meta-llama/Meta-Llama-3-8B-Instruct")
}

// TestReportReadsInfinity reads back a run with burstiness inf, which
// the result file holds as a bare Infinity (as vLLM's does).
func TestReportReadsInfinity(t *testing.T) {
	saved := filepath.Join(t.TempDir(), "run.json")
	benchInproc(t, "--burstiness", "inf", "--save-result", "--save-detailed", "--result-filename", saved, "--no-plot")
	data, err := os.ReadFile(saved)
	require.NoError(t, err)
	require.Contains(t, string(data), `"burstiness": Infinity`)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"report", saved, "--no-plot"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "Successful requests:                     24 ")
}

func TestReportErrors(t *testing.T) {
	vllmFile := filepath.Join("..", "..", "internal", "report", "testdata", "vllm-0.13", "result.json")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", []string{"report"}, 2, "want one result file, got 0"},
		{"missing file", []string{"report", filepath.Join(t.TempDir(), "nope.json")}, 1, "read result:"},
		{"vLLM's own file has no start times", []string{"report", vllmFile}, 1, "not a detailed result (needs errors, start_times and latencies)"},
		{"bad percentile", []string{"report", vllmFile, "--metric-percentiles", "200"}, 1, `--metric-percentiles: "200" is not a percentile`},
		{"bad goodput", []string{"report", vllmFile, "--goodput", "itl:5"}, 1, "Invalid metric name found, itl: 5.0."},
		{"bad flag", []string{"report", "x.json", "--bogus"}, 2, "unrecognized arguments: --bogus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			assert.Equal(t, tc.code, run(context.Background(), tc.args, &bytes.Buffer{}, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}
