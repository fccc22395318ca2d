package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// pair returns the base and head file of a crafted case.
func pair(name string) []string {
	return []string{filepath.Join("testdata", name, "base.txt"), filepath.Join("testdata", name, "head.txt")}
}

func args(extra []string, files []string) []string {
	return append(append([]string{}, extra...), files...)
}

// TestMainCrafted runs the command on the crafted inputs of testdata/gen.go
// and checks the exit code, the exact stderr, and stdout against a golden
// file.
func TestMainCrafted(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantExit   int
		wantStderr string
	}{
		{name: "regression", args: pair("regression"), wantExit: ExitRegression},
		{name: "noise", args: pair("noise"), wantExit: ExitPass},
		{name: "improvement", args: pair("improvement"), wantExit: ExitPass},
		{name: "within", args: pair("within"), wantExit: ExitPass},
		{name: "gotest", args: pair("gotest"), wantExit: ExitRegression},
		{name: "foursamples", args: pair("foursamples"), wantExit: ExitRegression},
		{name: "allfailed", args: pair("allfailed"), wantExit: ExitRegression},
		{name: "allfailed-nogoodput", args: pair("allfailed-nogoodput"), wantExit: ExitRegression},
		{name: "onefailedrun", args: pair("onefailedrun"), wantExit: ExitRegression},
		{name: "failrise", args: pair("failrise"), wantExit: ExitRegression},
		{name: "regression-tolerant", args: args([]string{"-policy", "testdata/policy/tolerant.yaml"}, pair("regression")), wantExit: ExitPass},
		{name: "regression-absolute", args: args([]string{"-policy", "testdata/policy/absolute.yaml"}, pair("regression")), wantExit: ExitPass},
		{name: "regression-holm", args: args([]string{"-holm"}, pair("regression")), wantExit: ExitRegression},
		{name: "regression-holm", args: append(pair("regression"), "-holm"), wantExit: ExitRegression},
		{name: "regression-holm", args: []string{pair("regression")[0], "-holm", "--", pair("regression")[1]}, wantExit: ExitRegression},
		{name: "config-ignored", args: args([]string{"-ignore", "target"}, pair("config")), wantExit: ExitPass},
		{name: "regression-markdown", args: args([]string{"-format", "markdown"}, pair("regression")), wantExit: ExitRegression},
		{name: "regression-json", args: args([]string{"-format", "json"}, pair("regression")), wantExit: ExitRegression},
		{name: "mismatched-markdown", args: args([]string{"-format", "markdown"}, pair("mismatched")), wantExit: ExitBadInput,
			wantStderr: "gate: mismatched inputs: gated benchmarks in base but not in head: Scenarios/scenario=burst\n"},
		{
			name: "fewsamples", args: pair("fewsamples"), wantExit: ExitBadInput,
			wantStderr: "gate: too few samples: 3 base and 3 head runs of Scenarios/scenario=chat-poisson ttft-p99-sec, Scenarios/scenario=burst ttft-p99-sec, " +
				"Scenarios/scenario=chat-poisson goodput-req/s and 3 more: the smallest p-value the Mann-Whitney U test can give " +
				"with so few runs is 0.100, above alpha 0.05, so no change could ever be significant; that needs at least 4 runs per side " +
				"(benchstat's rule: 4 at alpha 0.05), and a 95% confidence interval needs 6; rerun both sides with -count 6 or more\n",
		},
		{
			name: "foursamples-holm", args: args([]string{"-holm"}, pair("foursamples")), wantExit: ExitBadInput,
			wantStderr: "gate: too few samples: 4 base and 4 head runs of Scenarios/scenario=chat-poisson ttft-p99-sec, Scenarios/scenario=burst ttft-p99-sec, " +
				"Scenarios/scenario=chat-poisson goodput-req/s and 3 more: the smallest p-value the Mann-Whitney U test can give " +
				"with so few runs is 0.029, above alpha 0.05 / 6 gated comparisons (Holm) = 0.008333, so no change could ever be significant; that needs at least 5 runs per side " +
				"(benchstat's rule: 4 at alpha 0.05), and a 95% confidence interval needs 6; rerun both sides with -count 6 or more\n",
		},
		{
			name: "mismatched", args: pair("mismatched"), wantExit: ExitBadInput,
			wantStderr: "gate: mismatched inputs: gated benchmarks in base but not in head: Scenarios/scenario=burst\n",
		},
		{
			name: "config", args: pair("config"), wantExit: ExitBadInput,
			wantStderr: "gate: mismatched inputs: base and head differ in file configuration (target: \"sim\" in base, \"vllm\" in head) " +
				"for Scenarios/scenario=chat-poisson, Scenarios/scenario=burst; pass -ignore target to compare them anyway\n",
		},
		{
			name: "unknown-unit", args: args([]string{"-policy", "testdata/policy/unknown-unit.yaml"}, pair("noise")), wantExit: ExitBadInput,
			wantStderr: "gate: policy: gated unit \"ttft-p95-sec\" is in neither input (units: fail-ratio, goodput-req/s, tok/s, ttft-p99-sec)\n",
		},
		{
			name: "optional-absent", args: args([]string{"-policy", "testdata/policy/optional-absent.yaml"}, pair("noise")), wantExit: ExitBadInput,
			wantStderr: "gate: no gated unit in the inputs: the policy gates itl-p50-sec; the inputs report fail-ratio, goodput-req/s, tok/s, ttft-p99-sec\n",
		},
		{
			name: "wrong-sign", args: args([]string{"-policy", "testdata/policy/wrong-sign.yaml"}, pair("noise")), wantExit: ExitBadInput,
			wantStderr: "gate: policy: ttft-p99-sec: tolerance -5% points the good way (lower is better); write +5%\n",
		},
		{
			name: "missing-file", args: []string{"testdata/nope.txt", "testdata/noise/head.txt"}, wantExit: ExitBadInput,
			wantStderr: "gate: read base: stat testdata/nope.txt: no such file or directory\n",
		},
		{
			name: "empty-head", args: []string{"testdata/noise/base.txt", "testdata/empty.txt"}, wantExit: ExitBadInput,
			wantStderr: "gate: read head: testdata/empty.txt: no benchmark results\n",
		},
		{
			name: "missing-policy", args: args([]string{"-policy", "testdata/policy/nope.yaml"}, pair("noise")), wantExit: ExitBadInput,
			wantStderr: "gate: load policy: open testdata/policy/nope.yaml: no such file or directory\n",
		},
		{
			name: "bad-format", args: args([]string{"-format", "html"}, pair("noise")), wantExit: ExitBadInput,
			wantStderr: "gate: -format \"html\": want text, markdown or json\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, &stdout, &stderr)
			assert.Equal(t, tt.wantStderr, stderr.String())
			assert.Equal(t, tt.wantExit, code)
			golden(t, filepath.Join("testdata", "golden", tt.name+".txt"), stdout.String())
		})
	}
}

// golden compares got with a golden file, rewriting it under -update.
func golden(tb testing.TB, file, got string) {
	tb.Helper()
	if *update {
		require.NoError(tb, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(tb, os.WriteFile(file, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(file)
	require.NoError(tb, err, "run go test ./internal/gate -update to create it")
	assert.Equal(tb, string(want), got, "golden file %s (go test ./internal/gate -update rewrites it)", file)
}

// TestMainVerdictRows checks the verdict and reason of the rows that
// decide each crafted case, through the JSON report.
func TestMainVerdictRows(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		benchmark  string
		unit       string
		wantVerd   Verdict
		wantReason string
	}{
		{"regression", pair("regression"), "Scenarios/scenario=chat-poisson", "ttft-p99-sec", Fail, "regression: +27.82%, beyond tolerance +15% (p=0.000)"},
		{"noise", pair("noise"), "Scenarios/scenario=chat-poisson", "ttft-p99-sec", Pass, "no significant change (p=0.853 > α=0.05)"},
		{"improvement", pair("improvement"), "Scenarios/scenario=chat-poisson", "ttft-p99-sec", Pass, "better: -20.14% (p=0.000)"},
		{"improvement-goodput", pair("improvement"), "Scenarios/scenario=chat-poisson", "goodput-req/s", Pass, "better: +10.46% (p=0.000)"},
		{"within", pair("within"), "Scenarios/scenario=chat-poisson", "ttft-p99-sec", Pass, "worse: +2.85%, within tolerance +15% (p=0.000)"},
		{"absolute", args([]string{"-policy", "testdata/policy/absolute.yaml"}, pair("regression")), "Scenarios/scenario=chat-poisson", "ttft-p99-sec", Pass,
			"worse: +27.26m ttft-p99-sec, within tolerance +0.05 (p=0.000)"},
		{"mismatched", pair("mismatched"), "Scenarios/scenario=burst", "ttft-p99-sec", Error, "only in base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			Main(context.Background(), args([]string{"-format", "json"}, tt.args), &stdout, &stderr)
			var rep struct {
				Comparisons []struct {
					Benchmark, Unit, Reason string
					Verdict                 Verdict
				}
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
			found := false
			for _, c := range rep.Comparisons {
				if c.Benchmark == tt.benchmark && c.Unit == tt.unit {
					found = true
					assert.Equal(t, tt.wantVerd, c.Verdict)
					assert.Equal(t, tt.wantReason, c.Reason)
				}
			}
			assert.True(t, found, "no row %s %s", tt.benchmark, tt.unit)
		})
	}
}

// TestMainOutputs checks that -markdown and -json write their files and
// that usage errors exit 2.
func TestMainOutputs(t *testing.T) {
	dir := t.TempDir()
	md, js := filepath.Join(dir, "gate.md"), filepath.Join(dir, "gate.json")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args([]string{"-markdown", md, "-json", js}, pair("regression")), &stdout, &stderr)
	assert.Equal(t, ExitRegression, code)
	mdText, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(mdText), "### ❌ servegate gate: FAIL: 1 regression(s)"), string(mdText))
	assert.Contains(t, string(mdText), "| `Scenarios/scenario=chat-poisson` | `target=sim model=sim-tiny` | `ttft-p99-sec` (+15%) | 97.96m ± 4% | 125.22m ± 2% | +27.82% (p=0.000 n=10) | ❌ regression: +27.82%, beyond tolerance +15% (p=0.000) |")
	var rep Report
	jsText, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(jsText, &rep))
	assert.Equal(t, Fail, rep.Verdict)
	// The JSON round-trips into a Report.
	want, err := Run(context.Background(), Config{Base: pair("regression")[:1], Head: pair("regression")[1:]})
	require.NoError(t, err)
	require.Len(t, rep.Comparisons, len(want.Comparisons))
	for i, c := range rep.Comparisons {
		w := *want.Comparisons[i]
		w.problem = nil
		slices.SortFunc(w.Config, func(a, b KeyValue) int { return strings.Compare(a.Key, b.Key) })
		assert.Equal(t, w, *c, "comparison %d", i)
	}

	for _, bad := range [][]string{{"only-one.txt"}, {"-nosuchflag", "a", "b"}, {"a", "b", "c"}, {"a", "--", "b", "-holm"}} {
		stderr.Reset()
		assert.Equal(t, ExitBadInput, Main(context.Background(), bad, &stdout, &stderr), "%v", bad)
		assert.NotEmpty(t, stderr.String())
	}
	stdout.Reset()
	assert.Equal(t, ExitPass, Main(context.Background(), []string{"-print-policy"}, &stdout, &stderr))
	p, err := ParsePolicy(stdout.Bytes())
	require.NoError(t, err)
	assert.Equal(t, DefaultPolicy(), p, "DefaultPolicyYAML must say what DefaultPolicy does")
}

// TestMainDirectories checks that runs split across files in directories
// are pooled, giving the same report as one file per side.
func TestMainDirectories(t *testing.T) {
	dir := t.TempDir()
	for _, side := range []string{"base", "head"} {
		data, err := os.ReadFile(filepath.Join("testdata", "regression", side+".txt"))
		require.NoError(t, err)
		lines := strings.SplitAfter(string(data), "\n")
		header, runs := strings.Join(lines[:8], ""), lines[8:]
		require.NoError(t, os.MkdirAll(filepath.Join(dir, side), 0o755))
		half := len(runs) / 2
		require.NoError(t, os.WriteFile(filepath.Join(dir, side, "run1.txt"), []byte(header+strings.Join(runs[:half], "")), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, side, "run2.bench"), []byte(header+strings.Join(runs[half:], "")), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, side, "notes.md"), []byte("BenchmarkBogus 1 1 ttft-p99-sec\n"), 0o644))
	}
	var split, whole, stderr bytes.Buffer
	code := Main(context.Background(), []string{filepath.Join(dir, "base"), filepath.Join(dir, "head")}, &split, &stderr)
	assert.Equal(t, ExitRegression, code, stderr.String())
	Main(context.Background(), pair("regression"), &whole, &stderr)
	assert.Equal(t, whole.String(), split.String())
}

// TestMetadataWins checks that "Unit X better=..." in the inputs
// overrides the built-in direction, and that a gated unit with no
// direction at all is an input error.
func TestMetadataWins(t *testing.T) {
	dir := t.TempDir()
	write := func(name, meta string, values ...string) string {
		var b strings.Builder
		b.WriteString(meta)
		for _, v := range values {
			b.WriteString("BenchmarkScenarios/scenario=a 1 " + v + "\n")
		}
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644))
		return file
	}
	low := []string{"0.100 ttft-p99-sec 5 score", "0.101 ttft-p99-sec 5 score", "0.099 ttft-p99-sec 5 score", "0.100 ttft-p99-sec 5 score", "0.102 ttft-p99-sec 5 score", "0.098 ttft-p99-sec 5 score"}
	high := []string{"0.200 ttft-p99-sec 6 score", "0.201 ttft-p99-sec 6 score", "0.199 ttft-p99-sec 6 score", "0.200 ttft-p99-sec 6 score", "0.202 ttft-p99-sec 6 score", "0.198 ttft-p99-sec 6 score"}
	for i := range low {
		low[i] += " 0 fail-ratio"
		high[i] += " 0 fail-ratio"
	}

	// By default lower TTFT is better, so high -> low passes ...
	var stdout, stderr bytes.Buffer
	assert.Equal(t, ExitPass, Main(context.Background(), []string{write("b0.txt", "", high...), write("h0.txt", "", low...)}, &stdout, &stderr), stderr.String())
	// ... but metadata saying higher is better makes it a regression.
	meta := "Unit ttft-p99-sec better=higher\n"
	assert.Equal(t, ExitRegression, Main(context.Background(), []string{write("b1.txt", meta, high...), write("h1.txt", meta, low...)}, &stdout, &stderr), stderr.String())

	// A gated unit nobody gave a direction.
	pol := filepath.Join(dir, "score.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("gates:\n  score: 5%\n"), 0o644))
	stderr.Reset()
	code := Main(context.Background(), []string{"-policy", pol, write("b2.txt", "", low...), write("h2.txt", "", high...)}, &stdout, &stderr)
	assert.Equal(t, ExitBadInput, code)
	assert.Equal(t, "gate: gated unit score has no direction: add \"Unit score better=lower\" (or better=higher) to the inputs, or better: to its policy entry\n", stderr.String())
	// The policy can give it one.
	require.NoError(t, os.WriteFile(pol, []byte("gates:\n  score:\n    tolerance: 5%\n    better: lower\n"), 0o644))
	stderr.Reset()
	code = Main(context.Background(), []string{"-policy", pol, write("b3.txt", "", low...), write("h3.txt", "", high...)}, &stdout, &stderr)
	assert.Equal(t, ExitRegression, code, stderr.String())
}

// TestAssumeExact checks that units declared "assume=exact" are compared
// exactly, as benchstat does: one run per side suffices, any growth beyond
// the tolerance fails, and no U test is involved.
func TestAssumeExact(t *testing.T) {
	dir := t.TempDir()
	write := func(name, value string) string {
		file := filepath.Join(dir, name)
		text := "Unit image-bytes assume=exact better=lower\nBenchmarkImage 1 " + value + " image-bytes\n"
		require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
		return file
	}
	pol := filepath.Join(dir, "size.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("gates:\n  image-bytes: 1%\n"), 0o644))
	tests := []struct {
		head     string
		wantExit int
		reason   string
	}{
		{"1000000", ExitPass, "no change (exact)"},
		{"1005000", ExitPass, "worse: +0.50%, within tolerance +1% (exact)"},
		{"1020000", ExitRegression, "regression: +2.00%, beyond tolerance +1% (exact)"},
		{"900000", ExitPass, "better: -10.00% (exact)"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), []string{"-policy", pol, "-format", "json", write("base.txt", "1000000"), write("head.txt", tt.head)}, &stdout, &stderr)
		assert.Equal(t, tt.wantExit, code, "head %s: %s", tt.head, stderr.String())
		var rep Report
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
		require.Len(t, rep.Comparisons, 1)
		c := rep.Comparisons[0]
		assert.Equal(t, "exact", c.Assume)
		assert.Equal(t, tt.reason, c.Reason, "head %s", tt.head)
	}
}
