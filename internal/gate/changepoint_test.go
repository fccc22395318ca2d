package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeHistory writes one result file per commit into a new directory:
// three runs of a scenario whose p99 TTFT is ttft(i) seconds (with 2%
// noise) for commit i, and an optional extra line per file.
func writeHistory(t *testing.T, commits int, ttft func(i int) float64, extra func(i int) string) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range commits {
		var b strings.Builder
		b.WriteString("target: sim\n")
		for range 3 {
			v := ttft(i) * (1 + 0.02*rng.NormFloat64())
			fmt.Fprintf(&b, "BenchmarkScenario/scenario=chat 1 %.6f ttft-p99-sec 0 fail-ratio %.3f goodput-req/s\n", v, 20*(1+0.01*rng.NormFloat64()))
		}
		if extra != nil {
			b.WriteString(extra(i))
		}
		name := filepath.Join(dir, fmt.Sprintf("%04d-c%03d.benchfmt", i+1, i+1))
		require.NoError(t, os.WriteFile(name, []byte(b.String()), 0o644))
	}
	return dir
}

func runHistoryMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestHistoryFindsTheCommit(t *testing.T) {
	// p99 TTFT 33 ms, 20% worse from the 9th commit on (past the 15%
	// tolerance).
	dir := writeHistory(t, 16, func(i int) float64 {
		if i >= 8 {
			return 0.033 * 1.20
		}
		return 0.033
	}, nil)
	code, out, errOut := runHistoryMain(t, "-history", dir)
	assert.Equal(t, ExitRegression, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "shift at 0009-c009: 0.03")
	assert.Contains(t, out, ": regression")
	assert.Contains(t, out, "verdict: FAIL")

	code, out, _ = runHistoryMain(t, "-history", dir, "-format", "json")
	require.Equal(t, ExitRegression, code)
	var rep ChangePointReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	var ttft *HistorySeries
	for _, s := range rep.Series {
		if s.Unit == "ttft-p99-sec" {
			ttft = s
		}
	}
	require.NotNil(t, ttft)
	require.Len(t, ttft.Changes, 1)
	assert.Equal(t, "0009-c009", ttft.Changes[0].Commit)
	assert.InDelta(t, 0.20, ttft.Changes[0].Change, 0.03)
	assert.Equal(t, changeRegression, ttft.Changes[0].Kind)
}

func TestHistoryRecoveredOrImproved(t *testing.T) {
	// Slower for six commits, then fixed: main no longer carries it.
	dir := writeHistory(t, 18, func(i int) float64 {
		if i >= 6 && i < 12 {
			return 0.040
		}
		return 0.033
	}, nil)
	code, out, _ := runHistoryMain(t, "-history", dir)
	assert.Equal(t, ExitPass, code, out)
	assert.Contains(t, out, "shift at 0007-c007")
	assert.Contains(t, out, "shift at 0013-c013")
	assert.Contains(t, out, ": improvement")

	// A 2% shift is no regression under the default 5% tolerance.
	dir = writeHistory(t, 30, func(i int) float64 {
		if i >= 15 {
			return 0.033 * 1.02
		}
		return 0.033
	}, nil)
	code, out, _ = runHistoryMain(t, "-history", dir)
	assert.Equal(t, ExitPass, code, out)
	assert.NotContains(t, out, ": regression")
}

func TestHistoryFailsClosed(t *testing.T) {
	flat := func(int) float64 { return 0.033 }
	// Too short to tell a shift from noise.
	code, out, errOut := runHistoryMain(t, "-history", writeHistory(t, 5, flat, nil))
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, errOut, "no gated series has 6 commits")
	assert.Contains(t, out, "cannot tell")

	// An invalid run is left out, with a note naming the commit.
	dir := writeHistory(t, 8, flat, func(i int) string {
		if i == 3 {
			return "invalid: p99_lateness_ms = 456, want <= 50\nBenchmarkScenario/scenario=chat 1 9.9 ttft-p99-sec 0 fail-ratio 1 goodput-req/s\n"
		}
		return ""
	})
	code, out, _ = runHistoryMain(t, "-history", dir)
	assert.Equal(t, ExitPass, code, out)
	assert.Contains(t, out, "note: 0004-c004: 1 invalid or interrupted result line(s) left out")

	// A commit: key names the commit.
	dir = writeHistory(t, 8, flat, nil)
	files, err := filepath.Glob(filepath.Join(dir, "*.benchfmt"))
	require.NoError(t, err)
	for i, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f, append([]byte(fmt.Sprintf("commit: abc%d\n", i)), b...), 0o644))
	}
	_, out, _ = runHistoryMain(t, "-history", dir)
	assert.Contains(t, out, "(abc0 … abc7)")

	// A NaN is refused with its file and line; positional files too.
	dir = writeHistory(t, 8, flat, func(i int) string {
		return "BenchmarkScenario/scenario=chat 1 NaN ttft-p99-sec\n"
	})
	code, _, errOut = runHistoryMain(t, "-history", dir)
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, errOut, "0001-c001.benchfmt:5: ttft-p99-sec is NaN")
	code, _, errOut = runHistoryMain(t, "-history", dir, "base.txt")
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, errOut, "takes no BASE or HEAD")

	// More files than the documented limit are refused, not truncated.
	dir = t.TempDir()
	for i := range historyMaxPoints + 1 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d.txt", i)), []byte("BenchmarkX 1 1 ttft-p99-sec 0 fail-ratio\n"), 0o644))
	}
	code, _, errOut = runHistoryMain(t, "-history", dir)
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, errOut, "holds 501 result files; at most 500")
}
