package sim

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFrontendStaggersABurst: four requests that arrive at once pass the
// front end's serial part one at a time, so on either clock the k-th
// reaches the engine at frontend_serial_ms·(k+1) + frontend_ms. Each
// wants one token, and the serial part (40 ms) is longer than a prefill
// step (25 ms), so the engine is idle whenever one reaches it (no race
// with a step's edge) and the k-th TTFT is its reach plus one step. The
// real server (HTTP, real clock) and the replay (virtual clock) must both
// give that, within catchUp on the real clock; a front end that let the
// burst through together, or that forgot frontend_ms, fails both.
func TestFrontendStaggersABurst(t *testing.T) {
	p := DefaultParams()
	p.Model = "sim-frontend"
	p.MaxModelLen, p.MaxNumSeqs, p.MaxNumBatchedTokens, p.NumKVBlocks = 256, 8, 512, 64
	p.StepFixedMS, p.PrefillTokenUS, p.SeqUS, p.ContextTokenNS = 20, 100, 1000, 0
	p.FrontendMS, p.FrontendSerialMS = 30, 40
	p.Seed = 3
	reqs := make([]VirtualRequest, 4)
	for i := range reqs {
		reqs[i] = VirtualRequest{ID: fmt.Sprintf("burst-%d", i), Prompt: make([]int, 40), MaxTokens: 1}
		for k := range reqs[i].Prompt {
			reqs[i].Prompt[k] = 100 + k + 7*i // no shared prefix
		}
	}
	step0 := time.Duration((p.StepFixedMS + 40*p.PrefillTokenUS/1e3 + p.SeqUS/1e3) * float64(time.Millisecond))
	reach := func(i int) time.Duration {
		return time.Duration((float64(i+1)*p.FrontendSerialMS + p.FrontendMS) * float64(time.Millisecond))
	}

	virt, e, err := replay(context.Background(), p, reqs, ReplayOptions{})
	require.NoError(t, err)
	for k, v := range virt {
		assert.Equal(t, reach(k)+step0, v.TokenTimes[0], "virtual: request %d's TTFT", k)
	}
	steps := e.steps.last(stepLogSize)
	require.Len(t, steps, len(reqs), "virtual: one step a request")

	// On the real clock the four handlers race for the front end, so
	// which request goes first is not fixed: the k-th first token
	// (sorted) is compared with the replay's k-th.
	real, _ := realRun(t, p, reqs)
	var got, want []time.Duration
	for i := range real {
		got, want = append(got, msDur(real[i].truth.TokenMS[0])), append(want, virt[i].TokenTimes[0])
	}
	slices.Sort(got)
	slices.Sort(want)
	for k := range got {
		assert.InDelta(t, want[k].Seconds(), got[k].Seconds(), (catchUp + 2*time.Millisecond).Seconds(),
			"the %d-th TTFT: real %v, virtual %v", k, got[k], want[k])
	}
}
