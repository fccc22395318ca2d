package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(tb, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(tb, err)
	assert.Equal(tb, string(want), string(got))
}

func summary() map[string]float64 {
	return map[string]float64{
		"mean_ttft_ms": 12.345678901234, "median_ttft_ms": 11.5, "p99_ttft_ms": 40.125, "p99.9_ttft_ms": 41,
		"mean_tpot_ms": 2.5, "median_tpot_ms": 2.25, "p99_tpot_ms": 3.75,
		"mean_e2el_ms": 100, "median_e2el_ms": 90,
		"request_throughput": 3.9876543210987, "output_throughput": 255.5, "total_token_throughput": 1000.25,
		"request_goodput": 3.5, "goodput_ratio": 0.8777, "failure_ratio": 0,
	}
}

func lookup(name string) (float64, bool) { v, ok := summary()[name]; return v, ok }

func TestBenchMetrics(t *testing.T) {
	ms := BenchMetrics(lookup, []float64{99, 99.9, 50})
	want := []BenchMetric{
		{"ttft-mean-sec", 12.345678901234e-3, Lower}, {"ttft-p50-sec", 11.5e-3, Lower}, {"ttft-p99-sec", 40.125e-3, Lower}, {"ttft-p99.9-sec", 41e-3, Lower},
		{"tpot-mean-sec", 2.5e-3, Lower}, {"tpot-p50-sec", 2.25e-3, Lower}, {"tpot-p99-sec", 3.75e-3, Lower},
		{"e2el-mean-sec", 0.1, Lower}, {"e2el-p50-sec", 0.09, Lower},
		{"req/s", 3.9876543210987, Higher}, {"goodput-req/s", 3.5, Higher}, {"tok/s", 255.5, Higher}, {"total-tok/s", 1000.25, Higher},
		{"goodput-ratio", 0.8777, Higher}, {"fail-ratio", 0, Lower},
	}
	require.Len(t, ms, len(want))
	for i := range want {
		assert.Equal(t, want[i].Unit, ms[i].Unit)
		assert.InEpsilon(t, want[i].Value+1e-300, ms[i].Value+1e-300, 1e-12, want[i].Unit)
		assert.Equal(t, want[i].Better, ms[i].Better, want[i].Unit)
	}
}

func TestBenchfmtWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewBenchfmtWriter(&buf)
	cfg := []BenchConfig{{"model", "meta-llama/Meta-Llama-3-8B-Instruct"}, {"target", "sim"}, {"image", ""}, {"backend", "openai-chat"}, {"scenario-sha", "abc123"}}
	ms := BenchMetrics(lookup, []float64{99})
	require.NoError(t, w.WriteBenchfmtResult("Scenarios/scenario=chat-2", 1, cfg, ms))
	require.NoError(t, w.WriteBenchfmtResult("Scenarios/scenario=chat-2", 1, cfg, ms))
	cfg[4].Value = "def456"
	require.NoError(t, w.WriteBenchfmtResult("Scenarios/scenario=other-2", 1, cfg, ms[:2]))
	golden(t, "results.benchfmt", buf.Bytes())

	// benchfmt reads it back with no syntax error, the configuration, the
	// unit metadata and every value at full precision.
	r := benchfmt.NewReader(bytes.NewReader(buf.Bytes()), "results.benchfmt")
	var results []*benchfmt.Result
	units := map[string]string{}
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("syntax error: %v", rec)
		case *benchfmt.Result:
			results = append(results, rec.Clone())
		case *benchfmt.UnitMetadata:
			units[rec.Unit] = rec.Value
		}
	}
	require.NoError(t, r.Err())
	require.Len(t, results, 3)
	assert.Equal(t, "sim", results[0].GetConfig("target"))
	assert.Equal(t, "meta-llama/Meta-Llama-3-8B-Instruct", results[0].GetConfig("model"))
	assert.Equal(t, "def456", results[2].GetConfig("scenario-sha"))
	v, ok := results[0].Value("ttft-mean-sec")
	require.True(t, ok)
	assert.Equal(t, ms[0].Value, v, "full precision: the value reads back bit for bit")
	v, _ = results[1].Value("req/s")
	assert.Equal(t, 3.9876543210987, v)
	assert.Equal(t, "lower", units["ttft-p99-sec"])
	assert.Equal(t, "higher", units["goodput-req/s"])
	assert.Len(t, units, len(ms))
}

func TestBenchfmtWriterRejects(t *testing.T) {
	w := NewBenchfmtWriter(&bytes.Buffer{})
	assert.EqualError(t, w.WriteBenchfmtResult("a b", 1, nil, nil), `write benchfmt: benchmark name "a b" is empty or has spaces`)
	assert.EqualError(t, w.WriteBenchfmtResult("a", 1, nil, nil), `write benchfmt: a: no values (a run that sent no request reports none)`)
	assert.EqualError(t, w.WriteBenchfmtResult("a", 1, nil, []BenchMetric{{Unit: "ttft ms"}}), `write benchfmt: unit "ttft ms" is empty or has spaces`)
	assert.EqualError(t, w.WriteBenchfmtResult("a", 1, []BenchConfig{{"Model:", "x"}}, []BenchMetric{{"fail-ratio", 0, Lower}}), `write benchfmt: configuration key "Model:" is empty or has spaces or a colon`)
}

// TestBenchMetricsNoSuccess checks a run with no successful request. Its
// latencies and throughputs would be 0, which a gate reads as "-100%:
// better". So it reports only its fail-ratio. A run that sent nothing
// reports nothing.
func TestBenchMetricsNoSuccess(t *testing.T) {
	allFailed := map[string]float64{"completed": 0, "failed": 8, "failure_ratio": 1, "request_goodput": 0, "goodput_ratio": 0}
	for k, v := range summary() {
		if _, ok := allFailed[k]; !ok {
			allFailed[k] = v * 0 // what Summary.Value answers: 0
		}
	}
	units := func(m map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for _, bm := range BenchMetrics(func(name string) (float64, bool) { v, ok := m[name]; return v, ok }, []float64{99}) {
			out[bm.Unit] = bm.Value
		}
		return out
	}
	assert.Equal(t, map[string]float64{"fail-ratio": 1}, units(allFailed))

	nothingSent := map[string]float64{"completed": 0, "failed": 0, "failure_ratio": 0, "p99_ttft_ms": 0, "request_throughput": 0}
	assert.Empty(t, units(nothingSent))

	someFailed := map[string]float64{"completed": 1, "failed": 7, "failure_ratio": 0.875, "p99_ttft_ms": 20, "request_throughput": 0.5}
	assert.Equal(t, map[string]float64{"fail-ratio": 0.875, "ttft-p99-sec": 0.02, "req/s": 0.5}, units(someFailed))
}

// TestRunMarkers checks the configuration entries that mark interrupted
// and invalid runs: written on the marked line only (benchfmt.Writer
// deletes a key the next result lacks), never with an empty value.
func TestRunMarkers(t *testing.T) {
	assert.Equal(t, BenchConfig{"interrupted", "true"}, Interrupted())
	assert.Equal(t, BenchConfig{"invalid", "warmup failed"}, Invalid("warmup failed"))
	assert.Equal(t, BenchConfig{"invalid", "unspecified"}, Invalid(" "))

	var buf bytes.Buffer
	w := NewBenchfmtWriter(&buf)
	cfg := []BenchConfig{{"target", "sim"}}
	ms := []BenchMetric{{"fail-ratio", 0, Lower}}
	require.NoError(t, w.WriteBenchfmtResult("A", 1, cfg, ms))
	require.NoError(t, w.WriteBenchfmtResult("A", 1, append(cfg, Interrupted(), Invalid("x")), ms))
	require.NoError(t, w.WriteBenchfmtResult("A", 1, cfg, ms))
	r := benchfmt.NewReader(bytes.NewReader(buf.Bytes()), "markers")
	var got []string
	for r.Scan() {
		if res, ok := r.Result().(*benchfmt.Result); ok {
			got = append(got, res.GetConfig(store.InterruptedKey)+"/"+res.GetConfig(store.InvalidKey))
		}
	}
	assert.Equal(t, []string{"/", "true/x", "/"}, got, buf.String())
}

// TestBenchMetricsFromSummary runs a real summary of failed requests, with
// and without a goodput SLO, through the lookup servegate uses.
func TestBenchMetricsFromSummary(t *testing.T) {
	failed := make([]metrics.Record, 5)
	for i := range failed {
		failed[i] = metrics.Record{Start: time.Duration(i) * time.Millisecond, Latency: time.Millisecond, Failure: metrics.FailureHTTPStatus}
	}
	for _, goodput := range []map[string]float64{nil, {"ttft": 100}} {
		sum := metrics.Summarize(failed, time.Second, metrics.Options{Goodput: goodput})
		var units []string
		for _, m := range BenchMetrics(scenario.WithDerived(sum.Value), []float64{99}) {
			units = append(units, m.Unit)
			assert.Equal(t, 1.0, m.Value, m.Unit)
		}
		assert.Equal(t, []string{"fail-ratio"}, units, "goodput SLO %v", goodput)
	}
}

// TestBenchMetricsStreamed: a run that streamed reasoning or tool calls
// adds the time to first content token and the broken tool call ratio
// after the other units; a plain run (whose lookup answers the ttfc names
// and zero stream counts too) does not.
func TestBenchMetricsStreamed(t *testing.T) {
	units := func(extra map[string]float64) []string {
		m := summary()
		m["mean_ttfc_ms"], m["median_ttfc_ms"], m["p99_ttfc_ms"] = 300, 250, 900
		m["broken_tool_call_ratio"], m["total_reasoning_tokens"], m["total_tool_calls"], m["failed_broken_tool_call"] = 0.01, 0, 0, 0
		for k, v := range extra {
			m[k] = v
		}
		var out []string
		for _, bm := range BenchMetrics(func(name string) (float64, bool) { v, ok := m[name]; return v, ok }, []float64{99}) {
			out = append(out, bm.Unit)
		}
		return out
	}
	plain := units(nil)
	for _, extra := range []map[string]float64{{"total_reasoning_tokens": 120}, {"total_tool_calls": 3}, {"failed_broken_tool_call": 1}} {
		got := units(extra)
		assert.Equal(t, plain, got[:len(plain)], "%v", extra)
		assert.Equal(t, []string{"ttfc-mean-sec", "ttfc-p50-sec", "ttfc-p99-sec", "broken-tool-call-ratio"}, got[len(plain):], "%v", extra)
	}
	assert.NotContains(t, plain, "ttfc-p99-sec")
}
