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
// wants one token, and the serial part (100 ms) is longer than a prefill
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
	p.FrontendMS, p.FrontendSerialMS = 30, 100
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

	// On the real clock the handlers race for the front end and reach it
	// in an order and at times the test does not see (parsing comes
	// first), so the real run is checked against what the rule implies
	// whatever that order: each request's TTFT is at least one serial
	// turn, frontend_ms and a step; the times the requests reached the
	// engine (arrival + TTFT − a step) are a serial turn apart or more;
	// and the k-th (sorted) came no later than k+1 turns and frontend_ms
	// after the last arrival. A real token is never early (beyond a
	// timer's rounding); it may be late when the machine is busy, so a
	// late run (or one whose reaches a late wake-up brought closer) is
	// tried again, up to three times.
	turn, front := msDuration(p.FrontendSerialMS), msDuration(p.FrontendMS)
	const slack = 15 * time.Millisecond // a busy machine's late wake-ups
	var late []string
	for attempt := 0; attempt < 3; attempt++ {
		real, _ := realRun(t, p, reqs)
		var reached []time.Duration
		last := real[0].arrival
		for i, r := range real {
			got := msDur(r.truth.TokenMS[0])
			require.GreaterOrEqual(t, got, turn+front+step0-2*time.Millisecond, "request %d: real TTFT %v is shorter than one turn, frontend_ms and a step", i, got)
			reached = append(reached, r.arrival+got-step0)
			last = max(last, r.arrival)
		}
		slices.Sort(reached)
		late = late[:0]
		for k, at := range reached {
			// A handler woken late by a busy machine reaches the engine
			// late, and closer to the next than a turn: retried too.
			if k > 0 && at-reached[k-1] < turn-slack {
				late = append(late, fmt.Sprintf("the %d-th and %d-th reached the engine %v apart, less than a turn", k-1, k, at-reached[k-1]))
			}
			if bound := last + time.Duration(k+1)*turn + front + slack; at > bound {
				late = append(late, fmt.Sprintf("the %d-th reached the engine at %v, after %v", k, at, bound))
			}
		}
		if len(late) == 0 {
			return
		}
		t.Logf("attempt %d: real clock late: %v", attempt+1, late)
	}
	t.Errorf("three real runs were late: %v", late)
}
