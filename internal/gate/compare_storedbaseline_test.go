package gate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/store"
)

// storeSource is a scenario benchmark in miniature for ci/compare.sh
// --baseline-store (ci/compare-baseline.sh): each run writes store.bench.<n>.json (n counts the
// process's runs, as servegate names them) with the scenario's identity
// and 200 requests of one schedule, TTFT = ttft (the constant the head
// commit changes) × MACHINE (the machine's speed today, default 1) × a
// request's shape × 1% jitter of the run's own. In paired mode
// (SERVEGATE_PAIRED_BASE) it writes both sides, as servegate does.
const storeSource = `package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var runs int

func BenchmarkScenarios(b *testing.B) { b.Run("scenario=store", store) }

func store(b *testing.B) {
	for range b.N {
	}
	runs++
	dir := os.Getenv("SERVEGATE_OUT")
	machine := 1.0
	if m := os.Getenv("MACHINE"); m != "" {
		machine, _ = strconv.ParseFloat(m, 64)
	}
	seed, _ := strconv.Atoi(os.Getenv("SERVEGATE_COMPARE_RUN"))
	seed = 10*seed + runs
	if os.Getenv("SERVEGATE_COMPARE_SIDE") == "base" {
		seed += 500
	}
	write := func(name string, v float64, salt int) {
		var ttfts, sched, errs []string
		for i := range 200 {
			shape := 1 + 0.5*float64((i*37)%100)/100
			jitter := 1 + 0.01*math.Sin(float64(i*(seed+salt)))
			ttfts = append(ttfts, strconv.FormatFloat(v*shape*jitter, 'g', -1, 64))
			sched = append(sched, strconv.FormatFloat(0.1*float64(i), 'g', -1, 64))
			errs = append(errs, "\"\"")
		}
		js := fmt.Sprintf("{\"scenario\": \"store\", \"scenario-sha\": \"s1\", \"invalid\": null, \"ttfts\": [%s], \"errors\": [%s], \"scheduled_times\": [%s]}",
			strings.Join(ttfts, ", "), strings.Join(errs, ", "), strings.Join(sched, ", "))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(js), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(ttft*machine, "ttft-p99-sec")
	if base := os.Getenv("SERVEGATE_PAIRED_BASE"); base != "" {
		src, err := os.ReadFile(filepath.Join(base, "bench", "ttft.go"))
		if err != nil {
			b.Fatal(err)
		}
		baseTTFT, _ := strconv.ParseFloat(strings.TrimSpace(strings.SplitAfter(string(src), "= ")[1]), 64)
		pair := os.Getenv("SERVEGATE_PAIR")
		for file, v := range map[string]float64{"bench-base.benchfmt": baseTTFT, "bench.benchfmt": ttft} {
			line := fmt.Sprintf("pair: %s\nBenchmarkScenarios/scenario=store 1 %v ttft-p99-sec 0 fail-ratio\n", pair, v*machine)
			if err := os.WriteFile(filepath.Join(dir, file), []byte(line), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		write("store.bench-base.1.json", baseTTFT*machine, 1)
		write("store.bench.1.json", ttft*machine, 2)
		return
	}
	write(fmt.Sprintf("store.bench.%d.json", runs), ttft*machine, 0)
	f, err := os.OpenFile(filepath.Join(dir, "bench.benchfmt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "scenario-sha: s1\nBenchmarkScenarios/scenario=store 1 %v ttft-p99-sec 0 fail-ratio\n", ttft*machine)
}
`

// storeRepo makes a scratch repository for ci/compare-baseline.sh
// with a base commit (TTFT 0.100 s) and a head commit (headTTFT), and a
// results store holding main's 8 runs of the base commit on runner type
// cpu2, made by go test -count 8 at the base commit and filed with the
// store's add.
func storeRepo(t *testing.T, headTTFT string) (dir, base, head, storeDir string) {
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
	write("bench/store_test.go", storeSource)
	write("bench/ttft.go", "package bench\n\nconst ttft = 0.100\n")
	git("add", ".")
	git("commit", "-qm", "base")
	base = git("rev-parse", "HEAD")
	// main's runs of the base commit, as servegate-history.yml makes them
	out := t.TempDir()
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", ".", "-benchtime", "1x", "-count", "8", "./bench/...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SERVEGATE_OUT="+out)
	outb, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", outb)
	files, err := filepath.Glob(filepath.Join(out, "*"))
	require.NoError(t, err)
	require.Len(t, files, 9, "bench.benchfmt and 8 result files")
	storeDir = filepath.Join(t.TempDir(), "store")
	st, err := store.Create(storeDir)
	require.NoError(t, err)
	_, err = st.Add(context.Background(), store.AddRequest{Commit: base, CommitTime: time.Now().Add(-time.Hour), Runner: "cpu2", Files: files})
	require.NoError(t, err)

	write("bench/ttft.go", "package bench\n\nconst ttft = "+headTTFT+"\n")
	git("commit", "-qam", "head")
	head = git("rev-parse", "HEAD")
	return dir, base, head, storeDir
}

// TestCompareScriptBaselineStore runs ci/compare.sh --baseline-store
// (ci/compare-baseline.sh) on a scratch repository with a store of
// main's runs: an unchanged head passes and a 10% slower one fails
// after 2 fresh base runs and 3 head runs; a machine 10% slower today
// than when main's runs were stored is a drift: exit 2 with its reason
// (BASELINE_FALLBACK=0), or, by default, the fallback to servegate
// compare, whose verdict it is.
func TestCompareScriptBaselineStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test about 20 times")
	}
	script, err := filepath.Abs("../../ci/compare.sh")
	require.NoError(t, err)
	for _, tt := range []struct {
		name, head string
		env        []string
		code       int
		want       []string
		not        []string
	}{
		{"unchanged head", "0.1000", nil, ExitPass, []string{
			"== store: after head run 3 (exit 0)", "no drift: today's base is within ±2.47%",
			"PASS ttft-p50-sec: 3 head run(s) against the stored baseline, 2 fresh base run(s) for the drift check",
			"compare: stored baseline verdict: exit 0"}, []string{"head run 4 of"}},
		{"10% slower head", "0.110", nil, ExitRegression, []string{
			"FAIL ttft-p50-sec: 3 head run(s) against the stored baseline", "compare: stored baseline verdict: exit 1"}, nil},
		{"drift, no fallback", "0.1000", []string{"MACHINE=1.1", "BASELINE_FALLBACK=0"}, ExitBadInput, []string{
			"== store: after head run 1 (exit 2)", "drift: today's base differs from the stored baseline by +", "past the drift limit of ±2.47%",
			"exit 2 (BASELINE_FALLBACK=0)"}, []string{"head run 2 of"}},
		// The fallback is servegate compare, which a module that does
		// not require servegate cannot run: its refusal shows the call.
		{"drift, fallback to servegate compare", "0.110", []string{"MACHINE=1.1"}, ExitBadInput, []string{
			"falling back to servegate compare", "does not require github.com/servegate/servegate",
			"fell back to servegate compare: exit 2"}, nil},
		{"a store of another runner type", "0.1000", []string{"RUNNER_TYPE=cpu4", "BASELINE_FALLBACK=0"}, ExitBadInput, []string{
			"has no runs of runner type cpu4 (it has: cpu2)"}, nil},
		{"FRESH past COUNT", "0.1000", []string{"FRESH=9"}, ExitBadInput, []string{"FRESH=9: want 1 to COUNT (8) fresh base runs"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, base, head, store := storeRepo(t, tt.head)
			out := t.TempDir()
			cmd := exec.Command(script, "--baseline-store", store, base, head)
			cmd.Dir = dir
			cmd.Env = append(append(os.Environ(), "PKGS=./bench/...", "OUT="+out, "RUNNER_TYPE=cpu2"), tt.env...)
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
			t.Log(log)
			require.Equal(t, tt.code, code)
			for _, w := range tt.want {
				assert.Contains(t, log, w)
			}
			for _, w := range tt.not {
				assert.NotContains(t, log, w)
			}
		})
	}
}
