package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ids is the token ids from..to-1.
func ids(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// fixedParams is a profile whose every step lasts 10 ms.
func fixedParams() Params {
	p := DefaultParams()
	p.Model = "sim-virtual"
	p.StepFixedMS, p.PrefillTokenUS, p.SeqUS, p.ContextTokenNS = 10, 0, 0, 0
	return p
}

func ms(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Millisecond))
	}
	return out
}

// TestReplay checks the virtual clock's client and time against timelines
// worked out by hand on a profile of 10 ms steps.
func TestReplay(t *testing.T) {
	for _, c := range []struct {
		name string
		reqs []VirtualRequest
		opt  ReplayOptions
		want []VirtualResult
	}{
		{
			name: "one request: a token per step",
			reqs: []VirtualRequest{{Prompt: ids(1, 6), MaxTokens: 3}},
			want: []VirtualResult{{TokenTimes: ms(10, 20, 30), FinishReason: "length"}},
		},
		{
			name: "two at once batch together",
			reqs: []VirtualRequest{{Prompt: ids(1, 6), MaxTokens: 3}, {Prompt: ids(10, 16), MaxTokens: 2}},
			want: []VirtualResult{{TokenTimes: ms(10, 20, 30), FinishReason: "length"}, {TokenTimes: ms(10, 20), FinishReason: "length"}},
		},
		{
			name: "max concurrency 1 sends the second when the first ends",
			reqs: []VirtualRequest{{Prompt: ids(1, 6), MaxTokens: 3}, {Prompt: ids(10, 16), MaxTokens: 2}},
			opt:  ReplayOptions{MaxConcurrency: 1},
			want: []VirtualResult{{TokenTimes: ms(10, 20, 30), FinishReason: "length"}, {Sent: ms(30)[0], TokenTimes: ms(10, 20), FinishReason: "length"}},
		},
		{
			name: "an arrival during a step waits for the next",
			reqs: []VirtualRequest{{Prompt: ids(1, 6), MaxTokens: 3}, {Arrival: ms(15)[0], Prompt: ids(10, 16), MaxTokens: 1}},
			want: []VirtualResult{{TokenTimes: ms(10, 20, 30), FinishReason: "length"}, {Sent: ms(15)[0], TokenTimes: ms(15), FinishReason: "length"}},
		},
		{
			name: "an idle engine jumps to the next arrival",
			reqs: []VirtualRequest{{Prompt: ids(1, 6), MaxTokens: 1}, {Arrival: time.Hour, Prompt: ids(10, 16), MaxTokens: 2}},
			want: []VirtualResult{{TokenTimes: ms(10), FinishReason: "length"}, {Sent: time.Hour, TokenTimes: ms(10, 20), FinishReason: "length"}},
		},
		{
			name: "max simulated time cuts a request and leaves the next unsent",
			reqs: []VirtualRequest{{Prompt: ids(1, 6), MaxTokens: 5}, {Arrival: time.Hour, Prompt: ids(10, 16), MaxTokens: 2}},
			opt:  ReplayOptions{MaxSimulated: ms(25)[0]},
			want: []VirtualResult{{TokenTimes: ms(10, 20)}, {Unsent: true}},
		},
		{
			name: "requests go in the order of their arrivals, results in the order given",
			reqs: []VirtualRequest{{Arrival: ms(5)[0], Prompt: ids(1, 6), MaxTokens: 1}, {Prompt: ids(10, 16), MaxTokens: 2}},
			opt:  ReplayOptions{MaxConcurrency: 1},
			want: []VirtualResult{{Sent: ms(20)[0], TokenTimes: ms(10), FinishReason: "length"}, {TokenTimes: ms(10, 20), FinishReason: "length"}},
		},
		{
			name: "a shared prefix is found in the cache",
			reqs: []VirtualRequest{{Prompt: ids(1, 40), MaxTokens: 1}, {Arrival: ms(20)[0], Prompt: ids(1, 40), MaxTokens: 1}},
			want: []VirtualResult{{TokenTimes: ms(10), FinishReason: "length"}, {Sent: ms(20)[0], TokenTimes: ms(10), CachedTokens: 32, FinishReason: "length"}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Replay(context.Background(), fixedParams(), c.reqs, c.opt)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestReplayChunkedPrefill: a 100-token prompt under a 64-token budget
// prefills in two steps, each costing its prefill tokens.
func TestReplayChunkedPrefill(t *testing.T) {
	p := fixedParams()
	p.MaxNumBatchedTokens, p.PrefillTokenUS = 64, 100 // 6.4 ms and 3.6 ms more
	got, err := Replay(context.Background(), p, []VirtualRequest{{Prompt: ids(1, 101), MaxTokens: 2}}, ReplayOptions{})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{16.4 + 13.6, 16.4 + 13.6 + 10}, durMS(got[0].TokenTimes), 1e-6)
}

func durMS(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / 1e6
	}
	return out
}

// TestReplayEOS: without ignore_eos a request stops at the length the
// server would draw for it (same seed, same id).
func TestReplayEOS(t *testing.T) {
	p := fixedParams()
	p.EOSMinRatio, p.Seed = 0.2, 3
	reqs := make([]VirtualRequest, 20)
	for i := range reqs {
		reqs[i] = VirtualRequest{Prompt: ids(1, 6), MaxTokens: 50, EOS: true, ID: fmt.Sprint("eos-", i)}
	}
	got, err := Replay(context.Background(), p, reqs, ReplayOptions{})
	require.NoError(t, err)
	short := 0
	for i, r := range got {
		want := p.eosLength(seedOf(p.Seed, reqs[i].ID), 50, 0)
		assert.Len(t, r.TokenTimes, want, "request %d", i)
		if want < 50 {
			short++
			assert.Equal(t, "stop", r.FinishReason)
		}
	}
	assert.Positive(t, short, "eos_min_ratio 0.2 stops some early")
}

func TestReplayRefuses(t *testing.T) {
	ok := VirtualRequest{Prompt: ids(1, 6), MaxTokens: 3}
	bad := DefaultParams()
	bad.MaxNumSeqs = 0
	for _, c := range []struct {
		name string
		p    Params
		reqs []VirtualRequest
		opt  ReplayOptions
		want string
	}{
		{"invalid profile", bad, []VirtualRequest{ok}, ReplayOptions{}, "max_num_seqs: must be > 0"},
		{"negative concurrency", fixedParams(), []VirtualRequest{ok}, ReplayOptions{MaxConcurrency: -1}, "must not be negative"},
		{"empty prompt", fixedParams(), []VirtualRequest{ok, {MaxTokens: 1}}, ReplayOptions{}, "request 1: empty prompt"},
		{"no output", fixedParams(), []VirtualRequest{{Prompt: ids(1, 3)}}, ReplayOptions{}, "request 0: max tokens must be at least 1"},
		{"negative arrival", fixedParams(), []VirtualRequest{{Arrival: -1, Prompt: ids(1, 3), MaxTokens: 1}}, ReplayOptions{}, "is negative"},
		{"too long", fixedParams(), []VirtualRequest{{Prompt: ids(0, 4000), MaxTokens: 100}}, ReplayOptions{}, "over max_model_len 4096"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Replay(context.Background(), c.p, c.reqs, c.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestReplayCanceled: a done context stops the replay with its error and
// the results so far.
func TestReplayCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := Replay(ctx, fixedParams(), []VirtualRequest{{Prompt: ids(1, 6), MaxTokens: 3}}, ReplayOptions{})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, got, 1)
	assert.Empty(t, got[0].TokenTimes)
}

// TestReplayParallel: replays share nothing (calibration runs them in
// parallel); the same input gives the same output under the race detector.
func TestReplayParallel(t *testing.T) {
	p := fixedParams()
	p.Jitter, p.Seed = 0.2, 11
	reqs := []VirtualRequest{{Prompt: ids(1, 50), MaxTokens: 20}, {Arrival: ms(5)[0], Prompt: ids(1, 60), MaxTokens: 10}}
	want, err := Replay(context.Background(), p, reqs, ReplayOptions{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([][]VirtualResult, 4)
	for i := range got {
		wg.Go(func() { got[i], _ = Replay(context.Background(), p, reqs, ReplayOptions{}) })
	}
	wg.Wait()
	for i := range got {
		assert.Equal(t, want, got[i])
	}
}

// equivalenceParams is a profile whose steps (20 ms and more) are long
// against the real clock's timer overshoot, with a batch of at most 2, a
// 64-token budget (a 100-token prompt prefills in two chunks), the prefix
// cache on and a KV cache of 8 blocks (the last request is preempted).
// Jitter is 0: with jitter the two clocks still draw the same durations
// for the same steps, but a disturbed real run would shift which step
// draws which, and the comparison would say nothing.
func equivalenceParams() Params {
	p := DefaultParams()
	p.Model = "sim-equivalence"
	p.MaxModelLen, p.MaxNumSeqs, p.MaxNumBatchedTokens, p.NumKVBlocks = 128, 2, 64, 8
	p.StepFixedMS, p.PrefillTokenUS, p.SeqUS, p.ContextTokenNS = 20, 100, 1000, 1000
	p.Seed = 7
	return p
}

// equivalenceWorkload is five requests that overlap: the first at 0, each
// later one in the middle of a step of the replay of those before it (so
// 10 ms or more from any step's edge, where admission could go either
// way under the real clock's overshoot).
func equivalenceWorkload(tb testing.TB, p Params) []VirtualRequest {
	tb.Helper()
	cat := func(a, b []int) []int { return append(append([]int{}, a...), b...) }
	reqs := []VirtualRequest{
		{Prompt: ids(1, 101), MaxTokens: 8, ID: "eq-0"},
		{Prompt: cat(ids(1, 33), ids(200, 208)), MaxTokens: 6, ID: "eq-1"}, // two blocks shared with eq-0
		{Prompt: ids(300, 370), MaxTokens: 5, ID: "eq-2"},
		{Prompt: ids(400, 420), MaxTokens: 7, ID: "eq-3"},
		{Prompt: ids(1, 101), MaxTokens: 4, ID: "eq-4"}, // eq-0's prompt again
	}
	for j := 1; j < len(reqs); j++ {
		_, e, err := replay(context.Background(), p, reqs[:j], ReplayOptions{})
		require.NoError(tb, err)
		steps := e.steps.last(stepLogSize)
		k := 2*j - 1
		require.Greater(tb, len(steps), k, "request %d", j)
		reqs[j].Arrival = time.Duration((steps[k].StartMS + steps[k].DurationMS/2) * 1e6)
	}
	return reqs
}

// realRequest is what the real server knew of one request: its ground
// truth, and when it arrived and when the step that first scheduled it
// started, on the engine's clock (from its first step).
type realRequest struct {
	truth             Truth
	arrival, admitted time.Duration
}

// realRun sends reqs to an in-process server at their arrivals over HTTP
// and returns what the server knew of each request, and its steps.
func realRun(t *testing.T, p Params, reqs []VirtualRequest) ([]realRequest, []Step) {
	t.Helper()
	srv, base := start(t, Config{Params: &p, Tokenizer: wordTokenizer{}})
	t0 := time.Now()
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for j, r := range reqs {
		wg.Go(func() {
			time.Sleep(time.Until(t0.Add(r.Arrival)))
			body := map[string]any{"prompt": r.Prompt, "max_tokens": r.MaxTokens, "ignore_eos": true}
			res := post(context.Background(), base+"/v1/completions", body, map[string]string{"X-Request-Id": r.ID})
			if res.err != nil || res.status != 200 {
				errs[j] = fmt.Errorf("request %s: status %d, %v: %s", r.ID, res.status, res.err, res.body)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	steps := srv.Steps(stepLogSize)
	require.NotEmpty(t, steps)
	// The first step's start, on the monotonic clock: the engine's time zero.
	zero := srv.eng.started.Add(msDur(steps[0].StartMS))
	out := make([]realRequest, len(reqs))
	for j, r := range reqs {
		tr, ok := srv.Truth(r.ID)
		require.True(t, ok, r.ID)
		srv.truth.mu.Lock()
		rec := srv.truth.byID[r.ID].Value.(*seqRecord)
		srv.truth.mu.Unlock()
		rec.s.mu.Lock()
		queued := rec.s.truth.FirstScheduled
		rec.s.mu.Unlock()
		arrival := rec.wall.Sub(zero)
		out[j] = realRequest{truth: tr, arrival: arrival, admitted: arrival + queued}
	}
	return out, steps
}

func msDur(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }

// A modelClock maps the real engine's clock (from its first step) onto
// the modelled one: the real steps with the gaps of a disturbed clock
// taken out. A real step that ends more than catchUp late makes the next
// one start at now instead of at the modelled end: that gap is the real
// clock's jitter, and everything after it is shifted by it.
type modelClock struct {
	start, dur, shift []time.Duration // per step: real start, duration, gaps before it
}

func newModelClock(steps []Step) modelClock {
	var m modelClock
	for i, st := range steps {
		start, gap := msDur(st.StartMS-steps[0].StartMS), time.Duration(0)
		if i > 0 {
			if g := start - m.start[i-1] - m.dur[i-1]; g > time.Microsecond {
				gap = g
			}
			gap += m.shift[i-1]
		}
		m.start, m.dur, m.shift = append(m.start, start), append(m.dur, msDur(st.DurationMS)), append(m.shift, gap)
	}
	return m
}

// at maps a real time: within a step, by that step's shift; in a gap, to
// the modelled start of the next step (the engine takes up what arrived
// in a gap when that step starts); before the first step, to 0.
func (m modelClock) at(t time.Duration) time.Duration {
	i := len(m.start) - 1
	for i >= 0 && m.start[i] > t+time.Microsecond {
		i--
	}
	if i < 0 {
		return 0
	}
	end := m.start[i] + m.dur[i] - m.shift[i]
	return min(t-m.shift[i], end)
}

// gaps is the total gap the real clock took, for the log.
func (m modelClock) gaps() time.Duration { return m.shift[len(m.shift)-1] }

// modelArrivals are the requests with their real arrivals on the modelled
// clock. A request the engine took up in a step that started (by the
// model) before it arrived, drained when the late timer of the step
// before fired (within catchUp of its modelled end), arrives at that
// step's start instead: on the modelled clock that is when it was seen.
func modelArrivals(m modelClock, reqs []VirtualRequest, real []realRequest) []VirtualRequest {
	out := append([]VirtualRequest(nil), reqs...)
	for j, r := range real {
		out[j].Arrival = m.at(min(r.arrival, r.admitted))
	}
	return out
}

// timelineDiffs lists where the real and the virtual token times differ
// by more than tol on the modelled clock (the real arrival plus the
// ground truth's token_ms, mapped by m, against the virtual Sent plus
// TokenTimes), or where their tokens, preemptions or cache hits differ at
// all.
func timelineDiffs(m modelClock, real []realRequest, virt []VirtualResult, tol time.Duration) []string {
	var diffs []string
	for j := range real {
		r, v := real[j].truth, virt[j]
		if len(r.TokenMS) != len(v.TokenTimes) || r.Preemptions != v.Preemptions || r.CachedTokens != v.CachedTokens {
			diffs = append(diffs, fmt.Sprintf("request %d: %d tokens, %d preemptions, %d cached for real; %d, %d, %d virtual",
				j, len(r.TokenMS), r.Preemptions, r.CachedTokens, len(v.TokenTimes), v.Preemptions, v.CachedTokens))
			continue
		}
		for i, ms := range r.TokenMS {
			got := m.at(real[j].arrival + msDur(ms))
			want := v.Sent + v.TokenTimes[i]
			if d := got - want; d > tol || d < -tol {
				diffs = append(diffs, fmt.Sprintf("request %d token %d: real %v, virtual %v", j, i, got, want))
			}
		}
	}
	return diffs
}

// stepDiffs lists where the real engine's steps and the virtual ones
// differ: their batches exactly, their durations and their starts on the
// modelled clock to a microsecond.
func stepDiffs(m modelClock, real, virt []Step) []string {
	if len(real) != len(virt) {
		return []string{fmt.Sprintf("%d steps for real, %d virtual", len(real), len(virt))}
	}
	var diffs []string
	for i := range real {
		r, v := real[i], virt[i]
		start := m.start[i] - m.shift[i]
		same := r.Seqs == v.Seqs && r.PrefillTokens == v.PrefillTokens && r.DecodeSeqs == v.DecodeSeqs &&
			r.ContextTokens == v.ContextTokens && r.Preempted == v.Preempted &&
			math.Abs(r.DurationMS-v.DurationMS) < 1e-3 &&
			(start-msDur(v.StartMS-virt[0].StartMS)).Abs() < time.Microsecond
		if !same {
			diffs = append(diffs, fmt.Sprintf("step %d: real %+v (modelled start %v), virtual %+v", i, r, start, v))
		}
	}
	return diffs
}

// TestReplayEquivalence runs the same requests through the HTTP server on
// the real clock and through Replay, and compares the token timelines:
// every step's batch and duration exactly, every step's start and every
// token's time on the modelled clock.
//
// The real clock's jitter is of two kinds. A step that ends less than
// catchUp (5 ms) late moves nothing: the next starts at the modelled end
// and tokens carry the modelled times. One that ends later restarts the
// timeline from now; the step log shows the gap, and the modelled clock
// takes it out (modelClock). So the tolerance is catchUp: a real clock that
// kept within it cannot explain a larger difference, and a request moved
// to another step (20 ms or more) or a 10% slower model (2 ms a step,
// checked below) gives one. The two clocks in fact agree to the
// microsecond (the steps' starts are checked to that).
//
// The requests go out at the real arrivals the server saw (on the modelled
// clock), since the client's send lateness and loopback are not the
// engine's. They were scheduled mid-step, 10 ms or more from a step's
// edge; one the engine still took up early, in the catch-up window after
// a late timer, is replayed at the start of the step that took it.
func TestReplayEquivalence(t *testing.T) {
	p := equivalenceParams()
	reqs := equivalenceWorkload(t, p)
	real, realSteps := realRun(t, p, reqs)
	m := newModelClock(realSteps)
	at := modelArrivals(m, reqs, real)
	virt, e, err := replay(context.Background(), p, at, ReplayOptions{})
	require.NoError(t, err)
	preempted := 0
	for _, v := range virt {
		preempted += v.Preemptions
	}
	assert.Positive(t, preempted, "the workload is meant to preempt")
	assert.Positive(t, virt[4].CachedTokens, "the workload is meant to hit the prefix cache")
	assert.Empty(t, stepDiffs(m, realSteps, e.steps.last(stepLogSize)), "steps")
	assert.Empty(t, timelineDiffs(m, real, virt, catchUp), "token times")
	t.Logf("the real clock took %v of gaps out of %d steps", m.gaps(), len(realSteps))
	for j, r := range real {
		ttft := m.at(r.arrival+msDur(r.truth.TokenMS[0])) - at[j].Arrival
		t.Logf("%s: scheduled %v, arrived %v (modelled %v); TTFT on the modelled clock real %v, virtual %v", reqs[j].ID,
			reqs[j].Arrival, r.arrival, at[j].Arrival, ttft, virt[j].TokenTimes[0])
	}

	// The comparison can fail: the same requests on a model 10% slower.
	slow := p
	slow.Slowdown = 1.10
	slowVirt, slowE, err := replay(context.Background(), slow, at, ReplayOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, timelineDiffs(m, real, slowVirt, catchUp), "a 10% slower replay must not match")
	assert.NotEmpty(t, stepDiffs(m, realSteps, slowE.steps.last(stepLogSize)))
}

// BenchmarkReplay1000 replays 1000 requests sent at once to a profile
// that runs them all in one batch (gpu-8b's cost model, max_num_seqs
// 1024): 1000 concurrent sequences of a 128-token prompt and 256 output
// tokens. sim-s/wall-s is simulated seconds (the last token's time) per
// second of wall time: the virtual clock's speed-up over real time.
func BenchmarkReplay1000(b *testing.B) {
	p, err := LoadProfile("gpu-8b")
	require.NoError(b, err)
	p.MaxNumSeqs = 1024
	const n, prompt, out = 1000, 128, 256
	reqs := make([]VirtualRequest, n)
	for i := range reqs {
		reqs[i] = VirtualRequest{Prompt: ids(i*prompt, (i+1)*prompt), MaxTokens: out}
	}
	var simulated time.Duration
	tokens := 0
	for b.Loop() {
		res, err := Replay(context.Background(), p, reqs, ReplayOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			simulated = max(simulated, r.Sent+r.TokenTimes[len(r.TokenTimes)-1])
			tokens += len(r.TokenTimes)
		}
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(simulated.Seconds()*float64(b.N)/wall, "sim-s/wall-s")
	b.ReportMetric(float64(tokens)/wall, "tokens/wall-s")
	b.ReportMetric(simulated.Seconds(), "sim-s/op")
}
