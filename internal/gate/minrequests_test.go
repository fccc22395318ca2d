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
