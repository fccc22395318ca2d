package sim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// This file is the contract of the virtual clock. The engine that serves
// HTTP in real time also replays requests in simulated time. A replay runs
// orders of magnitude faster. Calibration and capacity prediction call
// Replay, and neither re-implements the engine. The engine's step loop
// runs on a clock from clock.go; Replay's clock is virtualClock below.

// VirtualRequest is one request of a replay.
type VirtualRequest struct {
	// Arrival is when the client would send the request, from the start
	// of the replay. With ReplayOptions.MaxConcurrency the request is
	// sent at Arrival or when a slot frees, whichever is later (as the
	// benchmark engine's semaphore does).
	Arrival time.Duration
	// Prompt is the prompt's token ids. Their content matters only for
	// the prefix cache; Replay does not keep the slice.
	Prompt []int
	// MaxTokens is the output length in tokens (the benchmark's requests
	// ignore EOS); at least 1.
	MaxTokens int
	// ID seeds the request's output tokens and its draft acceptance
	// (speculative decoding), as the x-request-id does on the server: a
	// request with the same ID and profile seed gets the same tokens on
	// either clock. Empty means its index in the replay ("0", "1", ...).
	ID string
	// EOS, when true, lets the request stop before MaxTokens as the
	// server stops a request sent without ignore_eos: at a length drawn
	// uniformly in [eos_min_ratio*MaxTokens, MaxTokens] from the
	// profile's seed and ID. False generates exactly MaxTokens.
	EOS bool
}

// VirtualResult is one request's outcome in simulated time.
type VirtualResult struct {
	// Sent is when the request reached the engine, from the start of the
	// replay (Arrival, or later under a concurrency limit).
	Sent time.Duration
	// TokenTimes are the times of each output token, from Sent: the
	// first is the TTFT, the differences are the ITLs.
	TokenTimes []time.Duration
	// CachedTokens are the prompt tokens found in the prefix cache.
	CachedTokens int
	// Preemptions counts the times the request was preempted.
	Preemptions int
	// FinishReason is "length" (MaxTokens reached), "stop" (an EOS
	// draw, with VirtualRequest.EOS) or "" when the replay stopped
	// before the request finished.
	FinishReason string
	// Unsent is true for a request the replay stopped (ReplayOptions.
	// MaxSimulated, or ctx) before it was sent; Sent is then 0.
	Unsent bool
}

// ReplayOptions shape the client side of a replay.
type ReplayOptions struct {
	// MaxConcurrency caps the requests in flight; 0 = no cap.
	MaxConcurrency int
	// MaxSimulated stops the replay after this much simulated time; 0 =
	// run until every request finished. A request not finished by then
	// has a nil TokenTimes or fewer than its MaxTokens. A step that would
	// end past it does not deliver its tokens.
	MaxSimulated time.Duration
}

// Replay runs reqs through the engine of p in simulated time and returns
// one result per request, in the order of reqs. The step durations are
// those of the real clock (p's cost model, slowdown and seeded jitter);
// nothing sleeps. Requests are sent in the order of their arrivals (ties
// in the order of reqs), first come first served under the concurrency
// limit. It stops early when ctx is done, returning the results so far
// with ctx's error.
//
// It runs the same step loop as the HTTP server (engine.run) on a virtual
// clock: before each step the requests that have arrived by its start are
// admitted (one that arrives during a step waits for the next, as on the
// server); an idle engine jumps to the next arrival; tokens are delivered
// at their step's end. Calls are independent and may run in parallel.
func Replay(ctx context.Context, p Params, reqs []VirtualRequest, opt ReplayOptions) ([]VirtualResult, error) {
	res, _, err := replay(ctx, p, reqs, opt)
	return res, err
}

// replay is Replay, returning the engine too (its step log, for tests).
func replay(ctx context.Context, p Params, reqs []VirtualRequest, opt ReplayOptions) ([]VirtualResult, *engine, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("replay: %w", err)
	}
	if err := checkReplay(p, reqs, opt); err != nil {
		return nil, nil, fmt.Errorf("replay: %w", err)
	}
	vc := newVirtualClock(p, reqs, opt)
	e := newEngineOn(p, newMetrics(p), vc)
	e.run(ctx)
	res := vc.results()
	if err := ctx.Err(); err != nil {
		return res, e, fmt.Errorf("replay: stopped at %v of simulated time: %w", vc.t.Sub(vc.base), context.Cause(ctx))
	}
	return res, e, nil
}

// checkReplay refuses what the server would refuse, and negative times.
func checkReplay(p Params, reqs []VirtualRequest, opt ReplayOptions) error {
	if opt.MaxConcurrency < 0 || opt.MaxSimulated < 0 {
		return fmt.Errorf("max concurrency and max simulated time must not be negative, got %d and %v", opt.MaxConcurrency, opt.MaxSimulated)
	}
	for i, r := range reqs {
		switch {
		case r.Arrival < 0:
			return fmt.Errorf("request %d: arrival %v is negative", i, r.Arrival)
		case len(r.Prompt) == 0:
			return fmt.Errorf("request %d: empty prompt", i)
		case r.MaxTokens < 1:
			return fmt.Errorf("request %d: max tokens must be at least 1, got %d", i, r.MaxTokens)
		case len(r.Prompt)+r.MaxTokens > p.MaxModelLen:
			return fmt.Errorf("request %d: prompt (%d tokens) plus max tokens (%d) is over max_model_len %d", i, len(r.Prompt), r.MaxTokens, p.MaxModelLen)
		}
	}
	return nil
}

// virtualEpoch is time zero of every replay: any fixed instant will do,
// as only differences are reported.
var virtualEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// virtualClock is simulated time, and the client of a replay: it sends
// the requests at their arrivals (under the concurrency limit, first come
// first served, like the benchmark engine's semaphore) and jumps from one
// step's end to the next.
type virtualClock struct {
	p     Params
	reqs  []VirtualRequest
	opt   ReplayOptions
	vocab *vocab
	base  time.Time // time zero
	t     time.Time // now
	seqs  []*seq    // per request; nil until sent
	order []int     // the requests by arrival (stable)
	next  int       // the next of order to send
	// free holds, oldest first, when each free concurrency slot was
	// released (0 for one never taken), under a concurrency limit.
	free []time.Duration
	// front holds the sent sequences still in the server's front end,
	// in the order they reach the engine, and reach when each does.
	front []*seq
	reach []time.Time
	// frontFree is when the front end's serial part is next free.
	frontFree time.Time
}

var _ clock = (*virtualClock)(nil)

func newVirtualClock(p Params, reqs []VirtualRequest, opt ReplayOptions) *virtualClock {
	v := &virtualClock{
		p: p, reqs: reqs, opt: opt, vocab: newVocab(wordTokenizer{}),
		base: virtualEpoch, t: virtualEpoch, seqs: make([]*seq, len(reqs)), order: make([]int, len(reqs)),
	}
	for i := range v.order {
		v.order[i] = i
	}
	slices.SortStableFunc(v.order, func(a, b int) int { return cmp.Compare(reqs[a].Arrival, reqs[b].Arrival) })
	if opt.MaxConcurrency > 0 {
		v.free = make([]time.Duration, opt.MaxConcurrency)
	}
	return v
}

func (v *virtualClock) now() time.Time { return v.t }

// arrive sends every request whose arrival has come, in order, while a
// concurrency slot is free, and hands the engine those whose front-end
// time (frontend_ms) is over. A request sent late for want of a slot is
// sent when the slot was released (a step's end), as the benchmark's
// dispatcher sends it then.
func (v *virtualClock) arrive(e *engine) {
	for v.next < len(v.order) {
		i := v.order[v.next]
		if v.base.Add(v.reqs[i].Arrival).After(v.t) {
			break
		}
		sent := v.reqs[i].Arrival
		if v.opt.MaxConcurrency > 0 {
			if len(v.free) == 0 {
				break
			}
			sent = max(sent, v.free[0])
			v.free = v.free[1:]
		}
		s := v.newSeq(i, sent)
		v.front = append(v.front, s)
		v.reach = append(v.reach, frontReach(s.arrival, &v.frontFree, v.p))
		v.next++
	}
	v.leaveFront(e)
}

// leaveFront hands the engine the sequences whose front-end time is
// over. The front end serves requests first come first served and adds
// the same time to each, so they leave it in the order they were sent.
func (v *virtualClock) leaveFront(e *engine) {
	n := 0
	for n < len(v.front) && !v.reach[n].After(v.t) {
		n++
	}
	if n > 0 {
		e.submit(v.front[:n]...)
		v.front, v.reach = v.front[n:], v.reach[n:]
	}
}

// newSeq is request i as the engine sees it, sent at sent.
func (v *virtualClock) newSeq(i int, sent time.Duration) *seq {
	r := &v.reqs[i]
	id := r.ID
	if id == "" {
		id = strconv.Itoa(i)
	}
	seed := seedOf(v.p.Seed, id)
	s := &seq{
		id: id, prompt: r.Prompt, promptLen: len(r.Prompt), maxTokens: r.MaxTokens, stopAt: "length",
		gen: v.vocab.stream(seed), arrival: v.base.Add(sent),
	}
	if r.EOS {
		if k := v.p.eosLength(seed, r.MaxTokens, 0); k < r.MaxTokens {
			s.maxTokens, s.stopAt = k, "stop"
		}
	}
	if v.opt.MaxConcurrency > 0 {
		s.onFinish = func(at time.Time) { v.free = append(v.free, at.Sub(v.base)) }
	}
	v.seqs[i] = s
	return s
}

// idle jumps to the next arrival; false when none is left (the replay is
// over), it is past MaxSimulated, or ctx is done.
func (v *virtualClock) idle(ctx context.Context, _ *engine) bool {
	if ctx.Err() != nil {
		return false
	}
	if len(v.front) > 0 {
		// The engine is idle while a request is in the front end: jump
		// to when it reaches the engine (or to an earlier arrival).
		// An arrival already due is waiting for a concurrency slot,
		// which only a step can free: it is no reason to stop here.
		at := v.reach[0]
		if v.next < len(v.order) {
			if a := v.base.Add(v.reqs[v.order[v.next]].Arrival); a.After(v.t) {
				at = minTime(at, a)
			}
		}
		if v.past(at) {
			return false
		}
		if at.After(v.t) {
			v.t = at
		}
		return true
	}
	if v.next >= len(v.order) {
		return false
	}
	at := v.base.Add(v.reqs[v.order[v.next]].Arrival)
	if v.past(at) {
		return false
	}
	if !at.After(v.t) && v.opt.MaxConcurrency > 0 && len(v.free) == 0 {
		return false // cannot happen: an idle engine holds no slot
	}
	if at.After(v.t) {
		v.t = at
	}
	return true
}

// sleep moves time to the step's end.
func (v *virtualClock) sleep(ctx context.Context, end time.Time, _ time.Duration) bool {
	if ctx.Err() != nil || v.past(end) {
		return false
	}
	v.t = end
	return true
}

// past reports whether t is after ReplayOptions.MaxSimulated.
func (v *virtualClock) past(t time.Time) bool {
	return v.opt.MaxSimulated > 0 && t.Sub(v.base) > v.opt.MaxSimulated
}

// results reads each request's outcome from its sequence's ground truth.
func (v *virtualClock) results() []VirtualResult {
	out := make([]VirtualResult, len(v.reqs))
	for i, s := range v.seqs {
		if s == nil {
			out[i].Unsent = true
			continue
		}
		s.mu.Lock()
		out[i] = VirtualResult{
			Sent: s.arrival.Sub(v.base), TokenTimes: s.truth.TokenTimes,
			CachedTokens: s.truth.CachedTokens, Preemptions: s.truth.Preemptions, FinishReason: s.finish,
		}
		s.mu.Unlock()
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
