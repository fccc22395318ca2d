package gate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/store"
)

// fillStore adds commits to a results store: commit i on runner holds
// three runs of a scenario whose p99 TTFT is ttft(i) seconds (2% noise),
// at scenario version sha(i). Commits are added newest first, so their
// order can only come from the commit times.
func fillStore(t *testing.T, st *store.Store, runner string, commits int, ttft func(i int) float64, sha func(i int) string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 3))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := commits - 1; i >= 0; i-- {
		var b strings.Builder
		fmt.Fprintf(&b, "target: inproc\nscenario-sha: %s\n", sha(i))
		for range 3 {
			fmt.Fprintf(&b, "BenchmarkScenarios/scenario=chat 1 %.6f ttft-p99-sec 0 fail-ratio %.3f goodput-req/s\n", ttft(i)*(1+0.02*rng.NormFloat64()), 20*(1+0.01*rng.NormFloat64()))
		}
		f := filepath.Join(t.TempDir(), "test.benchfmt")
		require.NoError(t, os.WriteFile(f, []byte(b.String()), 0o644))
		_, err := st.Add(context.Background(), store.AddRequest{Commit: fmt.Sprintf("z%03d", commits-i), CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: runner, Files: []string{f}})
		require.NoError(t, err)
	}
}

func TestHistoryStore(t *testing.T) {
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	// Commit ids run backwards (z016 is the oldest): order is by time.
	step := func(i int) float64 {
		if i >= 8 {
			return 0.033 * 1.20
		}
		return 0.033
	}
	same := func(int) string { return "v1" }
	fillStore(t, st, "cpu4", 16, step, same)

	code, out, errOut := runHistoryMain(t, "-history", st.Dir)
	assert.Equal(t, ExitRegression, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "(runner cpu4)")
	assert.Contains(t, out, "shift at z008: 0.03", "the ninth commit by time is z008")

	rep, err := RunChangePointsStore(st, ChangePointOptions{})
	require.NoError(t, err)
	require.Len(t, rep.CommitTimes, 16)
	for _, s := range rep.Series {
		assert.Equal(t, []int{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}, s.Runs)
		for i := range s.Values {
			assert.LessOrEqual(t, s.Low[i], s.Values[i])
			assert.GreaterOrEqual(t, s.High[i], s.Values[i])
		}
	}

	// A second runner type: -runner picks one.
	fillStore(t, st, "gpu", 16, func(int) float64 { return 0.010 }, same)
	code, _, errOut = runHistoryMain(t, "-history", st.Dir)
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, errOut, "2 runner types (cpu4, gpu): pick one with -runner")
	code, out, _ = runHistoryMain(t, "-history", st.Dir, "-runner", "gpu")
	assert.Equal(t, ExitPass, code, out)
	code, _, errOut = runHistoryMain(t, "-history", st.Dir, "-runner", "tpu")
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, errOut, `no runner "tpu"`)
	code, _, errOut = runHistoryMain(t, "-runner", "gpu", "a", "b")
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, errOut, "only with -history")
}

// TestHistoryStoreScenarioVersion: commits that ran an older version of
// the scenario are left out with a note, so a changed scenario file is
// never read as a regression.
func TestHistoryStoreScenarioVersion(t *testing.T) {
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	// The scenario was edited at commit 10 and measures 50% more since:
	// no regression of the server.
	fillStore(t, st, "cpu4", 20, func(i int) float64 {
		if i >= 10 {
			return 0.050
		}
		return 0.033
	}, func(i int) string {
		if i >= 10 {
			return "v2"
		}
		return "v1"
	})
	code, out, errOut := runHistoryMain(t, "-history", st.Dir)
	assert.Equal(t, ExitPass, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "10 commit(s) ran another version of the scenario than the newest (scenario-sha v2); left out")
	assert.Contains(t, out, "no persistent shift over 10 commits")
}

// TestHistoryStoreEmpty: an empty store is a clear error, exit 2.
func TestHistoryStoreEmpty(t *testing.T) {
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	code, _, errOut := runHistoryMain(t, "-history", st.Dir)
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, errOut, "holds no runs yet")
}

// TestMinKeepCommits: a prune by count keeps what the change-point gate needs.
func TestMinKeepCommits(t *testing.T) {
	assert.Equal(t, 2*historyMinSegment, store.MinKeepCommits)
}

// TestHistoryWindow: with a window, change points are searched among
// the newest points only; older ones are still reported.
func TestHistoryWindow(t *testing.T) {
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	fillStore(t, st, "cpu4", 30, func(i int) float64 {
		if i >= 5 {
			return 0.040
		}
		return 0.033
	}, func(int) string { return "v1" })
	rep, err := RunChangePointsStore(st, ChangePointOptions{})
	require.NoError(t, err)
	assert.Equal(t, Fail, rep.Verdict)
	rep, err = RunChangePointsStore(st, ChangePointOptions{Window: 20})
	require.NoError(t, err)
	assert.Equal(t, Pass, rep.Verdict, "the step at commit 5 is outside the newest 20")
	for _, s := range rep.Series {
		assert.Len(t, s.Values, 30)
		assert.Equal(t, 10, s.From)
	}
}
