package gate

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writePairs writes the detailed result files of paired runs of m with
// head slower by effect, and returns them as BASE1 HEAD1 BASE2 HEAD2 ...
func writePairs(t *testing.T, m noiseModel, effect float64, pairs int, seed uint64) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	dir := t.TempDir()
	var files []string
	for k := 1; k <= pairs; k++ {
		run := m.run(rng, effect)
		for _, side := range []string{"base", "head"} {
			ttfts, errs, sched := make([]float64, len(run)), make([]string, len(run)), make([]float64, len(run))
			for i, p := range run {
				ttfts[i], sched[i] = p.Base, p.Start
				if side == "head" {
					ttfts[i] = p.Head
				}
			}
			errs[5] = "stream_error: reset" // one failed request a run, left out
			f := filepath.Join(dir, fmt.Sprintf("%s-%d.json", side, k))
			require.NoError(t, os.WriteFile(f, resultJSON(t, ttfts, errs, sched), 0o644))
			files = append(files, f)
		}
	}
	return files
}

func TestMainSequential(t *testing.T) {
	// noisy's private noise per request and per run is so high that the
	// last look cannot detect twice the tolerance: cannot judge.
	noisy := highNoise
	noisy.Jitter, noisy.Run = 0.3, 0.4
	// capped decides neither way before the cap: it passes there.
	capped := highNoise
	capped.Jitter, capped.Run = 0.15, 0.03
	tests := []struct {
		name  string
		files []string
		code  int
		out   string // in stdout (pass, fail) or stderr (exit 2)
	}{
		{"clean stops early", writePairs(t, lowNoise, 0, 8, 1), ExitPass, "PASS ttft-p99-sec: 3 pairs used, stopped: no regression"},
		{"clear regression stops early", writePairs(t, lowNoise, 0.25, 8, 2), ExitRegression, "FAIL ttft-p50-sec: 3 pairs used, stopped: regression: +2"},
		{"too few pairs given", writePairs(t, lowNoise, 0, 2, 3), ExitBadInput, "not decided yet: ttft-p50-sec, ttft-p99-sec not decided after 2 pairs (2 of at least 3 pairs); run another pair (at most 8 in all)"},
		{"passes at the cap", writePairs(t, capped, 0.03, 8, 12), ExitPass, "(the cap); this run rules out slowdowns above"},
		{"too noisy to judge", writePairs(t, noisy, 0, 8, 4), ExitBadInput, "Remedies: more requests per run, a quieter runner, or a larger tolerance"},
		{"odd file count", writePairs(t, lowNoise, 0, 2, 5)[:3], ExitBadInput, "got 3 file(s)"},
		{"past the cap", writePairs(t, lowNoise, 0, 9, 6), ExitBadInput, "9 pairs, more than the cap of 8"},
		{"not a pair", append(writePairs(t, lowNoise, 0, 1, 7)[:1], writePairs(t, lowNoise, 0, 1, 8)[1]), ExitBadInput, "not a pair: request 0 is scheduled at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runHistoryMain(t, append([]string{"-sequential"}, tt.files...)...)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Contains(t, out+errOut, tt.out)
			if code != ExitBadInput {
				require.Contains(t, out, "pair 1: p50 TTFT")
				require.Contains(t, out, "199 request pairs, 1 left out (failed)")
			}
		})
	}
}
