package gate

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
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

// TestFastJudgeThinTail: a p99 over 100 request pairs or fewer has at
// most one request beyond it. It is judged at each look the
// other figures need, and a regression of it still fails; but it holds
// no pair open: when the medians have decided and it has not, it is
// listed as not judged, with the count and the remedy, and the medians
// decide. At 200 requests the same noise holds the verdict to the cap
// and is cannot judge (exit 2). This is the shipped multi-turn-chat (81
// requests), whose p99 TTFT raced for a shared prefix, and
// ramp-up-linear (100).
func TestFastJudgeThinTail(t *testing.T) {
	// A pair whose two slowest requests are 2 s on a side drawn at
	// random: a bimodal p99, medians alike.
	run := func(n int, rng *rand.Rand, headSlow bool) (base, head []byte) {
		side := func(slow bool) []byte {
			ttfts, errs, sched := make([]float64, n), make([]string, n), make([]float64, n)
			for i := range n {
				ttfts[i], sched[i] = 0.1+0.001*float64(i%7), 0.05*float64(i)
			}
			if slow {
				ttfts[n/3], ttfts[2*n/3] = 2, 2
			}
			data, err := json.Marshal(map[string]any{"ttfts": ttfts, "errors": errs, "start_times": sched, "scheduled_times": sched, "duration": 5.0})
			require.NoError(t, err)
			return data
		}
		b := rng.IntN(2) == 0
		h := rng.IntN(2) == 0 || headSlow
		return side(b && !headSlow), side(h)
	}
	verdict := func(n int, headSlow bool) *FastJudge {
		j, err := NewFastJudge(DefaultSequential(), DefaultPolicy(), 0, 0, rand.New(rand.NewPCG(1, 2)))
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(7, 7))
		for !j.Done() {
			b, h := run(n, rng, headSlow)
			pr, err := PairRunFromResults("thin", b, h)
			require.NoError(t, err)
			_, err = j.Add(pr)
			require.NoError(t, err)
		}
		return j
	}
	p99Why := func(j *FastJudge) string {
		for _, nj := range j.NotJudged {
			if nj.Unit == "ttft-p99-sec" {
				return nj.Why
			}
		}
		return ""
	}

	j := verdict(81, false)
	require.Equal(t, NoRegression, j.Decision, j.Why)
	require.Equal(t, 3, j.Pairs, "the medians decided at the first look; the thin p99 held no pair open")
	require.Contains(t, p99Why(j), "a p99 over 81 request pairs is the run's maximum or next to it: judged while the other figures needed pairs, it holds none open, and was still open when they had decided (")
	require.Contains(t, p99Why(j), "send 200 or more requests a run")
	require.NotContains(t, strings.Join(j.FigureLines(), "\n"), "CANNOT JUDGE")
	require.Contains(t, j.Markdown(), "| `ttft-p99-sec` | not judged |")

	j = verdict(100, false)
	require.Equal(t, NoRegression, j.Decision, j.Why)
	require.Equal(t, 3, j.Pairs, "at 100 requests, one beyond the p99, it is still thin")
	require.Contains(t, p99Why(j), "a p99 over 100 request pairs")

	j = verdict(200, false)
	require.Equal(t, Undecided, j.Decision, "at 200 requests the p99 is a tail, and too noisy a tail is still exit 2: %s", j.Why)
	require.Equal(t, 8, j.Pairs, "a tail that is not thin holds the verdict open to the cap")
	require.Empty(t, p99Why(j))

	j = verdict(81, true)
	require.Equal(t, Regression, j.Decision, "a thin tail still fails a regression: %s", j.Why)
	require.Equal(t, "ttft-p99-sec", j.Unit)
}
