package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchSource is a benchmark whose TTFT is ttft (a constant the head
// commit changes) times a jitter that depends only on the run number, so
// that an unchanged revision gives identical samples on both sides.
const benchSource = `package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func BenchmarkServe(b *testing.B) {
	run, _ := strconv.Atoi(os.Getenv("SERVEGATE_COMPARE_RUN"))
	jitter := 1 + 0.01*float64((run*7)%5)
	for range b.N {
	}
	b.ReportMetric(ttft*jitter, "ttft-p99-sec")
	b.ReportMetric(10/jitter, "goodput-req/s")
	b.ReportMetric(0, "fail-ratio")
	if pairedBench(b, run) {
		return
	}
	// What servegate's benchmarks also write: full precision, one more unit.
	if dir := os.Getenv("SERVEGATE_OUT"); dir != "" && os.Getenv("NO_BENCHFMT") == "" {
		line := fmt.Sprintf("BenchmarkServe 1 %v ttft-p99-sec %v goodput-req/s %v e2el-p99-sec 0 fail-ratio\n", ttft*jitter, 10/jitter, 2*ttft*jitter)
		if os.Getenv("MARK_RUN") == os.Getenv("SERVEGATE_COMPARE_RUN") && os.Getenv("SERVEGATE_COMPARE_SIDE") == "head" {
			line = "interrupted: true\n" + line // as servegate marks a run cut short
		}
		if err := os.WriteFile(filepath.Join(dir, "bench.benchfmt"), []byte(line), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
`

// pairedSource is what servegate's Bench does in paired mode, in
// miniature: with SERVEGATE_PAIRED_BASE set it reads base's TTFT from the
// base checkout and writes one run of each side, labelled pair:
// SERVEGATE_PAIR, to bench-base.benchfmt and bench.benchfmt. Both runs of
// a pair share a machine factor that varies by 60% from pair to pair.
const pairedSource = `package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func pairedBench(b *testing.B, run int) bool {
	baseDir := os.Getenv("SERVEGATE_PAIRED_BASE")
	if baseDir == "" {
		return false
	}
	src, err := os.ReadFile(filepath.Join(baseDir, "bench", "ttft.go"))
	if err != nil {
		b.Fatal(err)
	}
	baseTTFT, err := strconv.ParseFloat(strings.TrimSpace(strings.SplitAfter(string(src), "= ")[1]), 64)
	if err != nil {
		b.Fatal(err)
	}
	pair := os.Getenv("SERVEGATE_PAIR")
	p, _ := strconv.Atoi(pair)
	machine := 1 + 0.15*float64((p*7)%5)
	dir := os.Getenv("SERVEGATE_OUT")
	for file, v := range map[string]float64{"bench-base.benchfmt": baseTTFT * machine, "bench.benchfmt": ttft * machine} {
		line := fmt.Sprintf("pair: %s\nBenchmarkServe 1 %v ttft-p50-sec %v ttft-p99-sec 0 fail-ratio\n", pair, v/3, v)
		if err := os.WriteFile(filepath.Join(dir, file), []byte(line), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// The per-request result JSON of both sides (compare.sh
	// --sequential): 200 requests of one schedule, the machine factor
	// and each request's shape shared, 1% jitter of each side's own.
	for side, v := range map[string]float64{"base": baseTTFT * machine, "head": ttft * machine} {
		var ttfts, sched []string
		var errs []string
		for i := range 200 {
			shape := 1 + 0.5*float64((i*37)%100)/100
			off := 0
			if side == "head" {
				off = 5
			}
			jitter := 1 + 0.01*float64((i*13+off+p*3)%7-3)/3
			ttfts = append(ttfts, strconv.FormatFloat(v*shape*jitter, 'g', -1, 64))
			sched = append(sched, strconv.FormatFloat(0.1*float64(i), 'g', -1, 64))
			errs = append(errs, "\"\"")
		}
		name := "serve.bench.1.json"
		if side == "base" {
			name = "serve.bench-base.1.json"
		}
		js := fmt.Sprintf("{\"duration\": 20, \"ttfts\": [%s], \"errors\": [%s], \"start_times\": [%s]}", strings.Join(ttfts, ", "), strings.Join(errs, ", "), strings.Join(sched, ", "))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(js), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return true
}
`

// gitRepo makes a repository with a base commit (TTFT 0.100 s) and a head
// commit (TTFT headTTFT) and returns its directory and both commits.
func gitRepo(t *testing.T, headTTFT string) (dir, base, head string) {
	t.Helper()
	dir = t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	git("init", "-q", "-b", "main")
	write("go.mod", "module example.com/cmp\n\ngo 1.26\n")
	write("bench/bench_test.go", benchSource)
	write("bench/paired_test.go", pairedSource)
	write("bench/ttft.go", "package bench\n\nconst ttft = 0.100\n")
	git("add", ".")
	git("commit", "-qm", "base")
	base = git("rev-parse", "HEAD")
	write("bench/ttft.go", "package bench\n\nconst ttft = "+headTTFT+"\n")
	git("commit", "-qam", "head")
	head = git("rev-parse", "HEAD")
	return dir, base, head
}

// TestCompareScript runs ci/compare.sh on a scratch repository: a 50%
// TTFT slowdown fails the gate, an unchanged revision passes, and the
// runs alternate base, head, base, head.
func TestCompareScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test 16 times")
	}
	script, err := filepath.Abs("../../ci/compare.sh")
	require.NoError(t, err)
	dir, base, head := gitRepo(t, "0.150")

	var env []string
	compare := func(count string, refs ...string) (int, string, string) {
		out := t.TempDir()
		cmd := exec.Command(script, append([]string{"--interleaved"}, refs...)...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), env...), "COUNT="+count, "PKGS=./bench/...", "OUT="+out)
		if len(refs) == 2 && refs[0] == refs[1] {
			cmd.Env = append(cmd.Env, "WARMUP=1")
		}
		if count == "3" {
			cmd.Env = append(cmd.Env, "NO_BENCHFMT=1") // gate go test's output instead
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, out, stdout.String() + stderr.String()
	}

	code, out, log := compare("4", base, head)
	assert.Equal(t, ExitRegression, code, log)
	runs, err := os.ReadFile(filepath.Join(out, "runs.log"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(runs)), "\n")
	assert.Equal(t, []string{"run 1 base", "run 1 head", "run 2 base", "run 2 head", "run 3 base", "run 3 head", "run 4 base", "run 4 head"}, lines[1:len(lines)-1])
	var rep Report
	data, err := os.ReadFile(filepath.Join(out, "gate.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	failed, units := 0, map[string]bool{}
	for _, c := range rep.Comparisons {
		units[c.Unit] = true
		if c.Verdict == Fail {
			failed++
			assert.Equal(t, "ttft-p99-sec", c.Unit)
			assert.Equal(t, "Serve", c.Benchmark[:5])
		}
	}
	assert.Equal(t, 1, failed, log)
	assert.True(t, units["e2el-p99-sec"], "the gate read the collected bench.benchfmt files: %v", units)
	assert.Contains(t, string(runs), "gating "+filepath.Join(out, "base.benchfmt"))
	md, err := os.ReadFile(filepath.Join(out, "gate.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "servegate gate: FAIL")
	// The worktrees are gone.
	wt, err := exec.Command("git", "-C", dir, "worktree", "list").Output()
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(wt), "\n"), string(wt))

	// Head = base: identical samples, no change; one discarded warm-up.
	code, out, log = compare("4", base, base)
	assert.Equal(t, ExitPass, code, log)
	runs, err = os.ReadFile(filepath.Join(out, "runs.log"))
	require.NoError(t, err)
	assert.Contains(t, string(runs), "\nwarmup 1 base\nwarmup 1 head\nrun 1 base\n")
	baseTxt, err := os.ReadFile(filepath.Join(out, "base.txt"))
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(baseTxt), "BenchmarkServe"), "warm-ups are not gated")

	// Too few runs is the gate's input error, passed through.
	code, out, log = compare("3", base)
	assert.Equal(t, ExitBadInput, code, log)
	assert.Contains(t, log, "gate: too few samples: 3 base and 3 head runs")
	assert.Contains(t, log, "compare: gating "+filepath.Join(out, "base.txt"))

	// A run marked interrupted is refused, and only that one: the
	// marker at the end of its file does not carry over to the next.
	env = []string{"MARK_RUN=2"}
	code, _, log = compare("4", base, head)
	env = nil
	assert.Equal(t, ExitBadInput, code, log)
	assert.Contains(t, log, "gate: refused: 1 result line(s) come from runs that cannot speak for the server", log)
	assert.Contains(t, log, "head.benchfmt:7: BenchmarkServe: interrupted run: cut short before it sent its whole load", log)

	// A ref that does not exist.
	code, _, log = compare("4", "no-such-ref")
	assert.Equal(t, ExitBadInput, code, log)
	assert.Contains(t, log, "compare: unknown base ref no-such-ref")
}

// TestCompareScriptPaired runs ci/compare.sh --paired on a scratch
// repository whose head is 10% slower under a machine factor that varies
// by 60% between pairs: one go test run per pair, in the head checkout,
// both sides' results collected, and the paired gate fails the head.
func TestCompareScriptPaired(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test 7 times")
	}
	script, err := filepath.Abs("../../ci/compare.sh")
	require.NoError(t, err)
	dir, base, head := gitRepo(t, "0.110")
	compare := func(extra ...string) (int, string, string) {
		out := t.TempDir()
		cmd := exec.Command(script, append([]string{"--paired"}, extra...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "COUNT=6", "PKGS=./bench/...", "OUT="+out)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), out, buf.String()
		}
		require.NoError(t, err)
		return 0, out, buf.String()
	}
	code, out, log := compare(base, head)
	assert.Equal(t, ExitRegression, code, log)
	assert.Contains(t, log, "6 pairs (base and head at the same time, head's harness)")
	assert.Contains(t, log, "paired, 6 pairs, signed-rank p=0.031")
	runs, err := os.ReadFile(filepath.Join(out, "runs.log"))
	require.NoError(t, err)
	assert.Contains(t, string(runs), "pair 1 base+head\npair 2 base+head\n")
	baseBench, err := os.ReadFile(filepath.Join(out, "base.benchfmt"))
	require.NoError(t, err)
	assert.Equal(t, 6, strings.Count(string(baseBench), "pair: "), string(baseBench))
	// The same results, unpaired: the machine's noise hides the 10%.
	gcode, stdout, _ := gateRun(t, filepath.Join(out, "base.benchfmt"), filepath.Join(out, "head.benchfmt"))
	assert.Equal(t, ExitPass, gcode, stdout)

	// BENCHTIME other than 1x is refused before anything runs.
	t.Setenv("BENCHTIME", "2x")
	code, _, log = compare(base, head)
	assert.Equal(t, ExitBadInput, code, log)
	assert.Contains(t, log, "paired mode runs one pair per go test run")
}

// TestCompareScriptSequential runs ci/compare.sh --sequential on a
// scratch repository: a 10% slower head fails after the fewest pairs the
// design allows, an unchanged one passes as early, and gate.txt says how
// many pairs each scenario used and why it stopped.
func TestCompareScriptSequential(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test 6 times")
	}
	script, err := filepath.Abs("../../ci/compare.sh")
	require.NoError(t, err)
	for _, tt := range []struct {
		head  string
		count string
		code  int
		pairs int
		want  string
		mode  string
	}{
		{"0.110", "", ExitRegression, 3, "FAIL ttft-p99-sec: 3 pairs used, stopped: regression: +9.64%", "--sequential"},
		{"0.1000", "", ExitPass, 3, "PASS ttft-p99-sec: 3 pairs used, stopped: no regression", ""}, // the same TTFT, another commit; the default mode
		// A cap below the design's minimum is refused before anything runs.
		{"0.1000", "2", ExitBadInput, 0, "COUNT=2: the cap on pairs must be 3 to 8", ""},
	} {
		t.Run(tt.head+"/"+tt.count, func(t *testing.T) {
			dir, base, head := gitRepo(t, tt.head)
			out := t.TempDir()
			args := []string{base, head}
			if tt.mode != "" {
				args = append([]string{tt.mode}, args...)
			}
			cmd := exec.Command(script, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PKGS=./bench/...", "OUT="+out)
			if tt.count != "" {
				cmd.Env = append(cmd.Env, "COUNT="+tt.count)
			}
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else {
				require.NoError(t, err)
			}
			log := buf.String()
			require.Equal(t, tt.code, code, log)
			if tt.pairs == 0 {
				assert.Contains(t, log, tt.want)
				return
			}
			count := "8"
			if tt.count != "" {
				count = tt.count
			}
			assert.Contains(t, log, "at most "+count+" pairs, stopping when every scenario is decided")
			assert.Contains(t, log, fmt.Sprintf("pair %d of at most %s done", tt.pairs, count))
			assert.NotContains(t, log, fmt.Sprintf("pair %d of at most %s done", tt.pairs+1, count), "the pairs stop when every scenario is decided")
			gate, err := os.ReadFile(filepath.Join(out, "gate.txt"))
			require.NoError(t, err)
			assert.Contains(t, string(gate), fmt.Sprintf("== serve: after pair %d", tt.pairs))
			assert.Contains(t, string(gate), tt.want)
			// The summary says how many pairs it took and why it stopped,
			// on the console and in the Markdown for the job summary.
			why := map[int]string{ExitRegression: "regression of ttft-p50-sec after 3 pairs", ExitPass: "no regression after 3 pairs"}[tt.code]
			assert.Contains(t, string(gate), why)
			md, err := os.ReadFile(filepath.Join(out, "gate.md"))
			require.NoError(t, err)
			assert.Contains(t, string(md), "| `serve` | "+strconv.Itoa(tt.code)+" | 3 | "+why)
			assert.Contains(t, string(md), "| `ttft-p99-sec` |")
		})
	}
}
