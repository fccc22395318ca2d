package compare

import (
	"context"
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

// storedBench is a scenario benchmark in miniature for -mode stored:
// each run writes store.bench.<n>.json (n counts the process's runs, as
// servegate names them) with the scenario's identity and 200 requests
// of one schedule. TTFT = ttft (the constant head's commit changes) x
// MACHINE (the machine's speed today, default 1) x a request's shape x
// 1% jitter of the run's own.
const storedBench = `package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servegate/servegate/benchtest"
)

var _ = benchtest.OutDir

var runs int

func BenchmarkScenarios(b *testing.B) {
	b.Run("scenario=store", func(b *testing.B) {
		for range b.N {
		}
		runs++
		machine := 1.0
		if m := os.Getenv("MACHINE"); m != "" {
			machine, _ = strconv.ParseFloat(m, 64)
		}
		seed, _ := strconv.Atoi(os.Getenv("SERVEGATE_COMPARE_RUN"))
		seed = 10*seed + runs
		if os.Getenv("SERVEGATE_COMPARE_SIDE") == "base" {
			seed += 500
		}
		var ttfts, sched, errs []string
		for i := range 200 {
			shape := 1 + 0.5*float64((i*37)%100)/100
			jitter := 1 + 0.01*math.Sin(float64(i*seed))
			ttfts = append(ttfts, strconv.FormatFloat(ttft*machine*shape*jitter, 'g', -1, 64))
			sched = append(sched, strconv.FormatFloat(0.1*float64(i), 'g', -1, 64))
			errs = append(errs, "\"\"")
		}
		js := fmt.Sprintf("{\"scenario\": \"store\", \"scenario-sha\": \"s1\", \"invalid\": null, \"ttfts\": [%s], \"errors\": [%s], \"scheduled_times\": [%s]}",
			strings.Join(ttfts, ", "), strings.Join(errs, ", "), strings.Join(sched, ", "))
		dir := os.Getenv("SERVEGATE_OUT")
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("store.bench.%d.json", runs)), []byte(js), 0o644); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(ttft*machine, "ttft-p99-sec")
		f, err := os.OpenFile(filepath.Join(dir, "bench.benchfmt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintf(f, "scenario-sha: s1\nBenchmarkScenarios/scenario=store 1 %v ttft-p99-sec 0 fail-ratio\n", ttft*machine)
	})
}
`

// storedRepo makes a scratch module that requires servegate, with a
// base commit (TTFT 0.100 s) and head commits "same" (0.1000) and
// "slower" (0.110), and a results store holding main's 8 runs of the
// base commit on runner type cpu2.
func storedRepo(t *testing.T) (dir, storeDir string) {
	t.Helper()
	checkout, err := filepath.Abs("../..")
	require.NoError(t, err)
	gosum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	require.NoError(t, err)
	requires := "module example.com/user\n\ngo 1.26\n\nrequire " + Module + " v0.0.0\n\nreplace " + Module + " => " + checkout + "\n"
	dir = scratchRepo(t, requires, map[string]string{
		"go.sum":              string(gosum),
		"bench/ttft.go":       "package bench\n\nconst ttft = 0.100\n",
		"bench/bench_test.go": storedBench,
	})
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	run(nil, "go", "mod", "tidy")
	run(nil, "git", "commit", "-qam", "tidy")
	run(nil, "git", "tag", "base")
	base := run(nil, "git", "rev-parse", "HEAD")
	// main's runs of the base commit, as the history workflow makes them
	out := t.TempDir()
	run([]string{"SERVEGATE_OUT=" + out}, "go", "test", "-run", "^$", "-bench", ".", "-benchtime", "1x", "-count", "8", "./bench/")
	files, err := filepath.Glob(filepath.Join(out, "*"))
	require.NoError(t, err)
	require.Len(t, files, 9, "bench.benchfmt and 8 result files")
	storeDir = filepath.Join(t.TempDir(), "store")
	st, err := store.Create(storeDir)
	require.NoError(t, err)
	_, err = st.Add(context.Background(), store.AddRequest{Commit: base, CommitTime: time.Now().Add(-time.Hour), Runner: "cpu2", Files: files})
	require.NoError(t, err)
	for _, c := range []struct{ tag, ttft string }{{"same", "0.1000"}, {"slower", "0.110"}} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "bench/ttft.go"), []byte("package bench\n\nconst ttft = "+c.ttft+"\n"), 0o644))
		run(nil, "git", "commit", "-qam", c.tag)
		run(nil, "git", "tag", c.tag)
	}
	return dir, storeDir
}

// TestStored runs -mode stored on a scratch module with a store of
// main's runs. An unchanged head passes and a 10% slower one fails,
// each after 2 fresh base runs and 3 head runs. A machine 10% slower
// today than when main's runs were stored is a drift: compare falls
// back to base and head paired, which the miniature cannot run, and
// says so; with -no-fallback it is exit 2 with its reason, as is a store
// of another runner type. The samples hold 1% jitter of their own and no measured
// noise: each outcome is the same on every run.
func TestStored(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries and runs go test about 20 times")
	}
	dir, st := storedRepo(t)
	for _, c := range []struct {
		name, head, machine string
		runner              string
		noFallback          bool
		exit                int
		want                []string
	}{
		{"unchanged head", "same", "", "cpu2", false, 0, []string{"no regression", "3 head run(s) against the stored baseline, 2 fresh base run(s)"}},
		{"10% slower head", "slower", "", "cpu2", false, 1, []string{"regression", "3 head run(s) against the stored baseline"}},
		{"drift, no fallback", "same", "1.1", "cpu2", true, 2, []string{"no verdict: the stored baseline cannot serve: bench: store: -baseline-store: drift: ", "(-no-fallback)"}},
		{"another runner type, no fallback", "same", "", "cpu4", true, 2, []string{"has no runs of runner type cpu4 (it has: cpu2)"}},
		{"drift", "same", "1.1", "cpu2", false, 2, []string{"the stored baseline could not serve (bench: store: -baseline-store: drift: today's base differs from the stored baseline by +", "base and head ran paired instead"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.machine != "" {
				t.Setenv("MACHINE", c.machine)
			}
			out := filepath.Join(t.TempDir(), "out")
			var log strings.Builder
			res, _ := Run(context.Background(), Config{Dir: dir, Base: "base", Head: c.head, Out: out, Mode: ModeStored, Store: st, Runner: c.runner, NoFallback: c.noFallback, Log: &log})
			require.NotNil(t, res, log.String())
			assert.Equal(t, c.exit, res.Exit(), log.String())
			txt, err := os.ReadFile(filepath.Join(out, "gate.txt"))
			require.NoError(t, err)
			for _, w := range c.want {
				assert.Contains(t, string(txt), w)
			}
		})
	}
}
