package gate

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFastJudgeTooFewRequests: a scenario below the paired verdict's
// floor is no verdict, and the message names the floor and both
// remedies, a larger num_prompts or -mode interleaved.
func TestFastJudgeTooFewRequests(t *testing.T) {
	const n = 32
	run := func(scale float64) []byte {
		ttfts, errs, sched := make([]float64, n), make([]string, n), make([]float64, n)
		for i := range n {
			ttfts[i], sched[i] = scale*(0.1+0.001*float64(i%5)), 0.05*float64(i)
		}
		data, err := json.Marshal(map[string]any{"ttfts": ttfts, "errors": errs, "start_times": sched, "scheduled_times": sched, "duration": 2.0})
		require.NoError(t, err)
		return data
	}
	j, err := NewFastJudge(DefaultSequential(), DefaultPolicy(), 0, 0, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	pr, err := PairRunFromResults("hello, pair 1", run(1), run(1.01))
	require.NoError(t, err)
	_, err = j.Add(pr)
	require.ErrorContains(t, err, "the paired verdict needs a scenario of at least 50 requests that succeed on both sides: raise its dataset's num_prompts")
	require.ErrorContains(t, err, "or gate it with servegate compare -mode interleaved")
	require.Equal(t, 50, MinPairedRequests)
}

// TestFastJudgeThinTail: a p99 over fewer than 100 request pairs is the
// run's maximum, so the verdict lists it as not judged, with the count
// and the remedy, and judges the rest; at 100 it is judged. This is
// the shipped multi-turn-chat (81 requests), whose p99 TTFT could
// detect nothing below 52% after 8 pairs and left the verdict at exit 2.
func TestFastJudgeThinTail(t *testing.T) {
	run := func(n int, scale float64) []byte {
		ttfts, errs, sched := make([]float64, n), make([]string, n), make([]float64, n)
		for i := range n {
			ttfts[i], sched[i] = scale*(0.1+0.001*float64(i%7)), 0.05*float64(i)
		}
		data, err := json.Marshal(map[string]any{"ttfts": ttfts, "errors": errs, "start_times": sched, "scheduled_times": sched, "duration": 5.0})
		require.NoError(t, err)
		return data
	}
	judged := func(j *FastJudge) (units []string) {
		for _, f := range j.Figures() {
			units = append(units, f.Unit)
		}
		return units
	}
	for _, tc := range []struct {
		n    int
		p99  bool
		why  string
		figs []string
	}{
		{81, false, "pair 1 has 81 request pairs, fewer than the 100 a p99 needs to be more than the run's maximum: send 100 or more requests a run", []string{"ttft-p50-sec"}},
		{99, false, "pair 1 has 99 request pairs", []string{"ttft-p50-sec"}},
		{100, true, "", []string{"ttft-p50-sec", "ttft-p99-sec"}},
	} {
		j, err := NewFastJudge(DefaultSequential(), DefaultPolicy(), 0, 0, rand.New(rand.NewPCG(1, 2)))
		require.NoError(t, err)
		pr, err := PairRunFromResults("thin, pair 1", run(tc.n, 1), run(tc.n, 1.01))
		require.NoError(t, err)
		_, err = j.Add(pr)
		require.NoError(t, err, "n=%d", tc.n)
		require.Equal(t, tc.figs, judged(j), "n=%d", tc.n)
		var why string
		for _, nj := range j.NotJudged {
			if nj.Unit == "ttft-p99-sec" {
				why = nj.Why
			}
		}
		if tc.p99 {
			require.Empty(t, why, "n=%d: p99 judged", tc.n)
			continue
		}
		require.Contains(t, why, tc.why, "n=%d", tc.n)
		require.Contains(t, j.notJudgedText(), "ttft-p99-sec: pair 1 has")
		require.InDelta(t, 0.01/2, j.alphaOne, 1e-15, "n=%d: alpha split between median TTFT and fail-ratio", tc.n)
	}
}
