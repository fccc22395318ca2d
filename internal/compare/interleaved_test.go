package compare

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// interleavedBench is a scenario benchmark in miniature: its test
// imports benchtest, so that compare finds it, and it writes what a
// scenario's run writes in SERVEGATE_OUT, bench.benchfmt. Its TTFT is
// ttft times a jitter that depends only on the run's number, so that
// an unchanged side gives the same samples as the other.
const interleavedBench = `package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/servegate/servegate/benchtest"
)

var _ = benchtest.OutDir

func BenchmarkScenarios(b *testing.B) {
	b.Run("scenario=chat", func(b *testing.B) {
		side, run := os.Getenv("SERVEGATE_COMPARE_SIDE"), os.Getenv("SERVEGATE_COMPARE_RUN")
		if side == "" || run == "" {
			b.Fatal("not told its place")
		}
		n, _ := strconv.Atoi(run)
		jitter := 1 + 0.01*float64((n*7)%5)
		for range b.N {
		}
		b.ReportMetric(ttft*jitter, "ttft-p99-sec")
		line := fmt.Sprintf("BenchmarkScenarios/scenario=chat 1 %v ttft-p99-sec %v ttft-p50-sec 0 fail-ratio\n", ttft*jitter, ttft*jitter/2)
		if os.Getenv("MARK_RUN") == run && side == "head" {
			line = "interrupted: true\n" + line // as servegate marks a run cut short
		}
		if err := os.WriteFile(filepath.Join(os.Getenv("SERVEGATE_OUT"), "bench.benchfmt"), []byte(line), 0o644); err != nil {
			b.Fatal(err)
		}
	})
}
`

// TestInterleaved runs -mode interleaved on a scratch module whose
// head is 50% slower, then on an A/A. The samples are made without
// noise: the regression's runs are all slower than base's (p = 0.029
// at 4 runs a side, below alpha 0.05), and the A/A's are equal (p = 1).
// The outcome depends on no measurement.
func TestInterleaved(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four test binaries")
	}
	checkout, err := filepath.Abs("../..")
	require.NoError(t, err)
	gosum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	require.NoError(t, err)
	requires := "module example.com/user\n\ngo 1.26\n\nrequire " + Module + " v0.0.0\n\nreplace " + Module + " => " + checkout + "\n"
	dir := scratchRepo(t, requires, map[string]string{
		"go.sum":              string(gosum),
		"bench/ttft.go":       "package bench\n\nconst ttft = 0.1\n",
		"bench/bench_test.go": interleavedBench,
	})
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	// The scratch module's go.mod names what its test needs.
	run("go", "mod", "tidy")
	run("git", "commit", "-qam", "tidy")
	run("git", "tag", "base")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bench/ttft.go"), []byte("package bench\n\nconst ttft = 0.15\n"), 0o644))
	run("git", "commit", "-qam", "slower")
	run("git", "tag", "slower")

	// A run marked interrupted is refused, and only that one: its
	// marker does not carry over to the next run's lines.
	t.Run("interrupted", func(t *testing.T) {
		t.Setenv("MARK_RUN", "2")
		out := filepath.Join(t.TempDir(), "out")
		res, err := Run(context.Background(), Config{Dir: dir, Base: "base", Head: "slower", Out: out, Mode: ModeInterleaved, Count: minCount})
		var ie *InputError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, 2, res.Exit())
		for _, f := range []string{"gate.txt", "gate.md"} {
			txt, rerr := os.ReadFile(filepath.Join(out, f))
			require.NoError(t, rerr)
			assert.Contains(t, string(txt), "refused: 1 result line(s) come from runs that cannot speak for the server", f)
			assert.Contains(t, string(txt), "head.benchfmt:7: BenchmarkScenarios/scenario=chat: interrupted run", f)
		}
	})
	for _, c := range []struct {
		head string
		exit int
	}{{"slower", 1}, {"base", 0}} {
		t.Run(c.head, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var log strings.Builder
			res, err := Run(context.Background(), Config{Dir: dir, Base: "base", Head: c.head, Out: out, Mode: ModeInterleaved, Count: minCount, Log: &log})
			require.NoError(t, err, log.String())
			assert.Equal(t, c.exit, res.Exit(), log.String())
			for _, f := range []string{"base.txt", "head.txt", "base.benchfmt", "head.benchfmt", "gate.md", "gate.txt"} {
				fi, err := os.Stat(filepath.Join(out, f))
				if assert.NoError(t, err) {
					assert.NotZero(t, fi.Size(), f)
				}
			}
			// gate.json is servegate gate's report, which gate -merge reads.
			data, err := os.ReadFile(filepath.Join(out, "gate.json"))
			require.NoError(t, err)
			var rep struct {
				Verdict     string
				Comparisons []struct{ Unit, Verdict string }
			}
			require.NoError(t, json.Unmarshal(data, &rep))
			assert.Equal(t, map[int]string{0: "pass", 1: "fail"}[c.exit], rep.Verdict)
			assert.NotEmpty(t, rep.Comparisons)
			// Each side ran its own tree's benchmarks, alternating.
			bench, err := os.ReadFile(filepath.Join(out, "head.benchfmt"))
			require.NoError(t, err)
			assert.Equal(t, minCount, strings.Count(string(bench), "BenchmarkScenarios/scenario=chat"))
			md, err := os.ReadFile(filepath.Join(out, "gate.md"))
			require.NoError(t, err)
			assert.Contains(t, string(md), "ttft-p99-sec")
		})
	}
}
