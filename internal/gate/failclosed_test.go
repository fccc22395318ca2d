package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gateRun runs Main on args and returns the exit code, stdout and stderr.
func gateRun(tb testing.TB, args ...string) (int, string, string) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// writeText writes text to dir/name and returns the path.
func writeText(tb testing.TB, dir, name, text string) string {
	tb.Helper()
	file := filepath.Join(dir, name)
	require.NoError(tb, os.WriteFile(file, []byte(text), 0o644))
	return file
}

// servegateRuns returns n result lines of servegate runs of scenario a:
// TTFT p99 near ttft seconds, goodput 9.5 req/s, fail-ratio fail.
func servegateRuns(n int, ttft, fail float64) string {
	var b strings.Builder
	b.WriteString("target: sim\nUnit ttft-p99-sec better=lower\nUnit fail-ratio better=lower\n")
	for i := range n {
		b.WriteString("BenchmarkScenarios/scenario=a 1 ")
		b.WriteString(strings.Join([]string{ftoa(ttft + 0.001*float64(i)), "ttft-p99-sec", ftoa(fail), "fail-ratio"}, " "))
		b.WriteString("\n")
	}
	return b.String()
}

func ftoa(v float64) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// TestAllFailedHead checks a defect that was fixed: a head whose every
// request fails used to PASS (its latencies read 0, "-100%: better", and
// fail-ratio was not gated). servegate now writes no latency or
// throughput for a run with no successful request, and the gate fails
// such a head with and without goodput in the inputs, naming the runs.
func TestAllFailedHead(t *testing.T) {
	for _, name := range []string{"allfailed", "allfailed-nogoodput"} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := gateRun(t, "-format", "json", pair(name)[0], pair(name)[1])
			require.Equal(t, ExitRegression, code, stdout+stderr)
			var rep Report
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
			units := map[string]string{}
			for _, c := range rep.Comparisons {
				if c.Gated && c.Benchmark == "Scenarios/scenario=chat-poisson" {
					units[c.Unit] = string(c.Verdict) + ": " + c.Reason
				}
			}
			assert.Equal(t, "fail: regression: +1.000 fail-ratio, beyond tolerance +0 (p=0.000)", units["fail-ratio"])
			assert.Equal(t, "fail: no ttft-p99-sec in 10 of 10 head runs (base has it in 10 of 10): a run with no successful request reports no latency or throughput", units["ttft-p99-sec"])
			if name == "allfailed" {
				assert.Contains(t, units["goodput-req/s"], "fail: no goodput-req/s in 10 of 10 head runs")
			} else {
				assert.NotContains(t, units, "goodput-req/s")
			}
		})
	}
}

// TestFailRatioGated checks that a significant rise of fail-ratio fails
// the gate whatever the latencies do (here they improve by 20%), and
// that identical constant fail-ratios (0 against 0) pass.
func TestFailRatioGated(t *testing.T) {
	code, stdout, _ := gateRun(t, pair("failrise")...)
	assert.Equal(t, ExitRegression, code, stdout)
	assert.Contains(t, stdout, "FAIL: regression: +200.0m fail-ratio, beyond tolerance +0 (p=0.000)")
	assert.Contains(t, stdout, "PASS: better: -18.64%")

	dir := t.TempDir()
	for _, tt := range []struct {
		n          int
		base, head float64
		want       int
	}{
		{4, 0, 1, ExitRegression}, // 0,0,0,0 against 1,1,1,1: p = 0.029
		{4, 0, 0, ExitPass},       // all samples equal: p = 1
		{4, 1, 1, ExitPass},
		{4, 1, 0, ExitPass}, // fewer failures are better
		{10, 0, 0.01, ExitRegression},
	} {
		base := writeText(t, dir, "base.txt", servegateRuns(tt.n, 0.1, tt.base))
		head := writeText(t, dir, "head.txt", servegateRuns(tt.n, 0.1, tt.head))
		code, stdout, stderr := gateRun(t, base, head)
		assert.Equal(t, tt.want, code, "%d runs, fail-ratio %v -> %v\n%s%s", tt.n, tt.base, tt.head, stdout, stderr)
	}
}

// TestLostValues checks that the gate does not compare survivors: a
// head run that reports no value of a gated unit fails the gate, a head
// with fewer runs than base and a base with no value are errors.
func TestLostValues(t *testing.T) {
	code, stdout, _ := gateRun(t, pair("onefailedrun")...)
	assert.Equal(t, ExitRegression, code, stdout)
	assert.Contains(t, stdout, "FAIL: no ttft-p99-sec in 1 of 10 head runs (base has it in 10 of 10)")

	dir := t.TempDir()
	base := writeText(t, dir, "base.txt", servegateRuns(10, 0.1, 0))
	head := writeText(t, dir, "head.txt", servegateRuns(8, 0.1, 0))
	code, stdout, stderr := gateRun(t, base, head)
	assert.Equal(t, ExitBadInput, code, stdout)
	assert.Equal(t, "gate: too few head runs: 8 head against 10 base runs of Scenarios/scenario=a ttft-p99-sec, Scenarios/scenario=a fail-ratio: "+
		"the gate does not judge a head on fewer runs than its base; rerun head with -count 10\n", stderr)
	// More head runs than base runs are fine.
	code, stdout, stderr = gateRun(t, head, base)
	assert.Equal(t, ExitPass, code, stdout+stderr)

	// A base whose runs all failed is no reference.
	code, stdout, stderr = gateRun(t, pair("allfailed")[1], pair("allfailed")[0])
	assert.Equal(t, ExitBadInput, code, stdout)
	assert.Contains(t, stderr, "gate: no base value: none of the base runs of Scenarios/scenario=chat-poisson, Scenarios/scenario=burst reports ttft-p99-sec")
}

// TestBadValues checks a defect that was fixed: NaN made go-moremath's U
// test loop until the gate was OOM-killed, and +Inf read as a
// regression. Any NaN, ±Inf or negative duration anywhere in the input,
// gated or not, filtered out or not, is exit 2 naming file:line.
//
// The test first calls read, which on the old code accepted the values
// and returned at once, so this test fails fast there instead of hanging
// in the statistics; only then does it run the whole command.
func TestBadValues(t *testing.T) {
	dir := t.TempDir()
	good := servegateRuns(6, 0.1, 0)
	tests := []struct {
		name, line, want string
	}{
		{"nan", "BenchmarkScenarios/scenario=a 1 NaN ttft-p99-sec 0 fail-ratio", "ttft-p99-sec is NaN: not a finite number"},
		{"inf", "BenchmarkScenarios/scenario=a 1 +Inf ttft-p99-sec 0 fail-ratio", "ttft-p99-sec is +Inf: not a finite number"},
		{"neginf", "BenchmarkScenarios/scenario=a 1 0.1 ttft-p99-sec -Inf fail-ratio", "fail-ratio is -Inf: not a finite number"},
		{"negative", "BenchmarkScenarios/scenario=a 1 -0.1 ttft-p99-sec 0 fail-ratio", "ttft-p99-sec is -0.1: a negative duration"},
		{"ungated", "BenchmarkScenarios/scenario=a 1 0.1 ttft-p99-sec 0 fail-ratio NaN tok/s", "tok/s is NaN: not a finite number"},
		{"nsop", "BenchmarkScenarios/scenario=a 1 -5 ns/op 0.1 ttft-p99-sec 0 fail-ratio", "ns/op is -5e-09: a negative duration"},
		{"filtered", "BenchmarkOther 1 NaN ttft-p99-sec 0 fail-ratio", "ttft-p99-sec is NaN: not a finite number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := writeText(t, dir, "base.txt", good)
			head := writeText(t, dir, "head-"+tt.name+".txt", good+tt.line+"\n")
			line := strings.Count(good, "\n") + 1
			where := head + ":" + ftoa(float64(line)) + ": Benchmark" + strings.TrimPrefix(strings.Fields(tt.line)[0], "Benchmark") + ": "

			_, err := read([]string{base}, []string{head}, "/scenario:a", "", false)
			require.Error(t, err, "read must refuse the value before any statistics")
			assert.Contains(t, err.Error(), where+tt.want)

			code, stdout, stderr := gateRun(t, "-filter", "/scenario:a", base, head)
			assert.Equal(t, ExitBadInput, code, stdout)
			assert.Equal(t, "gate: bad value: 1 result line(s) hold a NaN, an infinity or a negative duration, which no comparison can use; fix or remove them:\n"+
				"gate: "+where+tt.want+"\n", stderr)
		})
	}
}

// TestFiniteGuard checks the last guard before the statistics: a
// non-finite value that got past read errors the row instead of reaching
// the U test.
func TestFiniteGuard(t *testing.T) {
	assert.True(t, finite([]float64{0, 1, -1}))
	assert.False(t, finite([]float64{0, math.NaN()}))
	assert.False(t, finite([]float64{math.Inf(-1)}))
}

// TestManyBadValues checks that the error stays short when every line is
// bad: the first lines are named, the rest counted.
func TestManyBadValues(t *testing.T) {
	dir := t.TempDir()
	base := writeText(t, dir, "base.txt", servegateRuns(6, 0.1, 0))
	head := writeText(t, dir, "head.txt", strings.Repeat("BenchmarkScenarios/scenario=a 1 NaN ttft-p99-sec 0 fail-ratio\n", 1000))
	_, err := read([]string{base}, []string{head}, "", "", false)
	require.Error(t, err, "read must refuse the values before any statistics")
	code, _, stderr := gateRun(t, base, head)
	assert.Equal(t, ExitBadInput, code)
	assert.Equal(t, maxRejectsShown+2, strings.Count(stderr, "\n"), stderr)
	assert.Contains(t, stderr, "gate: bad value: 1000 result line(s)")
	assert.Contains(t, stderr, "gate: ... and 990 more\n")
}

// TestRefusedRuns checks that result lines of interrupted or invalid
// runs are refused (exit 2, naming them) and that the keys, once
// deleted, no longer apply to the lines after them.
func TestRefusedRuns(t *testing.T) {
	dir := t.TempDir()
	base := writeText(t, dir, "base.txt", servegateRuns(6, 0.1, 0))
	good := servegateRuns(6, 0.1, 0)
	tests := []struct {
		name, text, want string
	}{
		{"interrupted", good + "interrupted: true\nBenchmarkScenarios/scenario=a 1 0.1 ttft-p99-sec 0 fail-ratio\n",
			":11: BenchmarkScenarios/scenario=a: interrupted run: cut short before it sent its whole load"},
		{"invalid", good + "invalid: warmup failed\nBenchmarkScenarios/scenario=a 1 0.1 ttft-p99-sec 0 fail-ratio\n",
			":11: BenchmarkScenarios/scenario=a: invalid run: load generator fell behind: warmup failed"},
		{"ungated-benchmark", good + "interrupted: yes\nBenchmarkScenarios/scenario=b 1 0.1 ttft-p99-sec 0 fail-ratio\n",
			":11: BenchmarkScenarios/scenario=b: interrupted run: cut short before it sent its whole load"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := writeText(t, dir, "head.txt", tt.text)
			code, stdout, stderr := gateRun(t, base, head)
			assert.Equal(t, ExitBadInput, code, stdout)
			assert.Equal(t, "gate: refused: 1 result line(s) come from runs that cannot speak for the server (interrupted or invalid in their configuration); rerun them:\n"+
				"gate: "+head+tt.want+"\n", stderr)
		})
	}
	// "interrupted: false" and a deleted key are no marks.
	head := writeText(t, dir, "head.txt", "interrupted: false\n"+good+"interrupted: true\ninvalid: x\ninterrupted:\ninvalid:\n"+good)
	code, stdout, stderr := gateRun(t, base, head)
	assert.Equal(t, ExitPass, code, stdout+stderr)
}

// TestAlphaFlag checks that -alpha 0 is an error, not silently the
// policy's alpha, and that any alpha outside (0, 1) is refused.
func TestAlphaFlag(t *testing.T) {
	for _, tt := range []struct{ alpha, want string }{
		{"0", "gate: -alpha 0: must be in (0, 1), such as 0.05: at alpha 0 no change is ever significant, so the gate would pass anything\n"},
		{"1", "gate: -alpha 1: must be in (0, 1), such as 0.05\n"},
		{"-0.1", "gate: -alpha -0.1: must be in (0, 1), such as 0.05\n"},
		{"NaN", "gate: -alpha NaN: must be in (0, 1), such as 0.05\n"},
	} {
		code, stdout, stderr := gateRun(t, "-alpha", tt.alpha, pair("noise")[0], pair("noise")[1])
		assert.Equal(t, ExitBadInput, code, stdout)
		assert.Equal(t, tt.want, stderr)
	}
	code, stdout, stderr := gateRun(t, "-alpha", "0.01", "-format", "json", pair("noise")[0], pair("noise")[1])
	require.Equal(t, ExitPass, code, stderr)
	var rep Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, 0.01, rep.Alpha)
}

// TestPolicyMessages checks the policy errors that were fixed: an empty file
// said "parse policy: EOF" and "alpha: 2" alone said "line 0: gates".
func TestPolicyMessages(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, text, want string }{
		{"empty.yaml", "", "gate: FILE: parse policy: the policy is empty: want at least a gates: mapping of unit to tolerance (servegate gate -print-policy prints the default)\n"},
		{"comments.yaml", "# nothing\n", "gate: FILE: parse policy: the policy is empty: want at least a gates: mapping of unit to tolerance (servegate gate -print-policy prints the default)\n"},
		{"alpha.yaml", "alpha: 2\n", "gate: FILE: parse policy: line 1: alpha: 2 is out of range: must be in (0, 1), such as 0.05\n" +
			"gate: gates: missing: want a mapping of unit to tolerance, such as \"gates: {ttft-p99-sec: 5%}\" (servegate gate -print-policy prints the default)\n"},
		{"levels.yaml", "gates:\n  fail-ratio: +0\nconfidence: 1\nalpha: 0\n", "gate: FILE: parse policy: line 4: alpha: 0 is out of range: must be in (0, 1), such as 0.05\n" +
			"gate: line 3: confidence: 1 is out of range: must be in (0, 1), such as 0.95\n"},
		{"gates.yaml", "alpha: 0.05\ngates: 5%\n", "gate: FILE: parse policy: line 2: gates: want a mapping of unit to tolerance\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeText(t, dir, tt.name, tt.text)
			code, stdout, stderr := gateRun(t, "-policy", file, pair("noise")[0], pair("noise")[1])
			assert.Equal(t, ExitBadInput, code, stdout)
			assert.Equal(t, strings.ReplaceAll(tt.want, "FILE", file), stderr)
		})
	}
}

// TestRunMarkersFromWriter checks that the gate refuses what servegate's
// writer marks (report.Interrupted, report.Invalid).
func TestRunMarkersFromWriter(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, marks map[int]report.BenchConfig) string {
		var buf bytes.Buffer
		w := report.NewBenchfmtWriter(&buf)
		for i := range 6 {
			cfg := []report.BenchConfig{{Key: "target", Value: "sim"}}
			if m, ok := marks[i]; ok {
				cfg = append(cfg, m)
			}
			ms := []report.BenchMetric{{Unit: "ttft-p99-sec", Value: 0.1 + 0.001*float64(i), Better: report.Lower}, {Unit: "fail-ratio", Value: 0, Better: report.Lower}}
			require.NoError(t, w.WriteBenchfmtResult("Scenarios/scenario=a", 1, cfg, ms))
		}
		return writeText(t, dir, name, buf.String())
	}
	base := write("base.benchfmt", nil)
	code, stdout, stderr := gateRun(t, base, write("clean.benchfmt", nil))
	require.Equal(t, ExitPass, code, stdout+stderr)

	head := write("head.benchfmt", map[int]report.BenchConfig{2: report.Interrupted(), 4: report.Invalid("wrong model")})
	code, stdout, stderr = gateRun(t, base, head)
	assert.Equal(t, ExitBadInput, code, stdout)
	assert.Contains(t, stderr, "gate: refused: 2 result line(s)")
	assert.Contains(t, stderr, "BenchmarkScenarios/scenario=a: interrupted run: cut short before it sent its whole load\n")
	assert.Contains(t, stderr, "BenchmarkScenarios/scenario=a: invalid run: load generator fell behind: wrong model\n")
}
