package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// engine is the continuous-batching model. One goroutine runs steps on a
// clock (clock.go: real time for the HTTP server, virtual time for
// Replay): each step admits and schedules sequences under max_num_seqs and the
// token budget (prefilling long prompts in chunks), allocates KV blocks
// (preempting the latest admitted sequence when none is free), sleeps for
// the step's modelled duration, then hands each sequence whose known tokens
// are all computed one new token. Queueing, saturation and the knee come
// out of this loop; nothing looks at the offered load.
type engine struct {
	p   Params
	kv  *kvCache
	rng *rand.Rand
	clk clock // the step loop's time

	waiting []*seq // FIFO; preempted sequences go back to the front
	running []*seq // admission order; the last one is preempted first

	preemptions int       // engine-owned count, for the step log
	loaded      int       // blocks loaded from the offload tier for the step being planned
	started     time.Time // zero of the step log's times

	mu      sync.Mutex
	steps   stepLog
	inbox   []*seq
	aborted []*seq
	resets  []resetRequest
	wake    chan struct{}
	stats   engineStats
	metrics *metrics
}

// engineStats is what /metrics reads of the engine, updated every step.
type engineStats struct {
	Running, Waiting int
	KVUsage          float64
	Steps            int64
}

// stepPlan is one sequence's share of a step.
type stepPlan struct {
	s      *seq
	numNew int
	draft  int // draft tokens verified (speculative decoding)
}

// decoding reports whether the sequence computes just its last generated
// token; anything else (prompt, or prompt and output recomputed after a
// preemption) is prefill.
func (ps stepPlan) decoding() bool {
	return ps.numNew == 1 && len(ps.s.output) > 0 && ps.s.numComputed == ps.s.numTokens()-1
}

// catchUp is how late a step may end and the next one still start at the
// modelled instant rather than now, so timer overshoot does not accumulate
// into the token rate.
const catchUp = 5 * time.Millisecond

// newEngine makes the engine of the HTTP server, on the real clock.
func newEngine(p Params, m *metrics) *engine { return newEngineOn(p, m, realClock{}) }

// newEngineOn makes an engine whose step loop runs on clk.
func newEngineOn(p Params, m *metrics, clk clock) *engine {
	e := &engine{
		clk:     clk,
		started: clk.now(),
		p:       p,
		kv:      newKVCache(p.NumKVBlocks, p.BlockSize, p.EnablePrefixCaching),
		rng:     rand.New(rand.NewPCG(uint64(p.Seed), 0x5e4e9a7e)),
		wake:    make(chan struct{}, 1),
		metrics: m,
	}
	if p.KVOffloadBlocks > 0 && p.EnablePrefixCaching {
		e.kv.offload = newOffloadTier(p.KVOffloadBlocks, m.offloadStore)
	}
	return e
}

// submit queues sequences; the engine admits them at its next step.
func (e *engine) submit(ss ...*seq) {
	e.mu.Lock()
	e.inbox = append(e.inbox, ss...)
	e.mu.Unlock()
	e.poke()
}

// abort removes a sequence (the client went away) at the next step.
func (e *engine) abort(s *seq) {
	e.mu.Lock()
	e.aborted = append(e.aborted, s)
	e.mu.Unlock()
	e.poke()
}

// A resetRequest asks the engine to forget its prefix cache; done gets
// whether it did.
type resetRequest struct {
	// external also empties the offload tier.
	external bool
	done     chan bool
}

// resetPrefixCache forgets the cached prefixes at the engine's next
// step boundary. It reports false, as vLLM does, while running
// sequences hold KV blocks.
func (e *engine) resetPrefixCache(ctx context.Context, external bool) (bool, error) {
	r := resetRequest{external: external, done: make(chan bool, 1)}
	e.mu.Lock()
	e.resets = append(e.resets, r)
	e.mu.Unlock()
	e.poke()
	select {
	case ok := <-r.done:
		return ok, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (e *engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *engine) snapshot() engineStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// run is the step loop; it returns when ctx is done (or, on the virtual
// clock, when the replay is over). The clock decides what time it is, how
// a step's duration passes and how an idle engine waits for work; all the
// rest is the same on either clock.
func (e *engine) run(ctx context.Context) {
	var next time.Time // when the previous step ended, as modelled
	for {
		e.clk.arrive(e)
		e.drainInbox()
		if len(e.waiting) == 0 && len(e.running) == 0 {
			e.publish()
			if !e.clk.idle(ctx, e) {
				return
			}
			next = time.Time{}
			continue
		}
		start := e.clk.now()
		if !next.IsZero() && start.Sub(next) < catchUp {
			start = next
		}
		preempts := e.preemptions
		plan := e.schedule(start)
		st := e.describe(start, plan, e.preemptions-preempts)
		d := e.stepDuration(st)
		e.record(st, d)
		end := start.Add(d)
		e.publish()
		if !e.clk.sleep(ctx, end, d) {
			return
		}
		e.finishStep(plan, end)
		next = end
	}
}

// drainInbox moves new sequences to the waiting queue and drops aborted ones.
func (e *engine) drainInbox() {
	e.mu.Lock()
	inbox, aborted, resets := e.inbox, e.aborted, e.resets
	e.inbox, e.aborted, e.resets = nil, nil, nil
	e.mu.Unlock()
	for _, s := range inbox {
		s.state = seqWaiting
		e.waiting = append(e.waiting, s)
	}
	for _, s := range aborted {
		if s.state == seqDone {
			continue
		}
		e.waiting = remove(e.waiting, s)
		e.running = remove(e.running, s)
		e.free(s)
		s.state = seqDone
		s.drop()
		s.deliver(nil, e.clk.now(), "abort")
	}
	for _, r := range resets {
		ok := e.kv.resetPrefix()
		if ok && r.external && e.kv.offload != nil {
			e.kv.offload.reset()
		}
		r.done <- ok
	}
}

func remove(q []*seq, s *seq) []*seq {
	for i, x := range q {
		if x == s {
			return append(q[:i], q[i+1:]...)
		}
	}
	return q
}

func (e *engine) free(s *seq) {
	e.kv.release(s.blocks)
	s.blocks = nil
	s.committed = 0
}

// schedule picks this step's work: running sequences first (a decode token
// each, or the next prefill chunk), then waiting ones while there is room.
// Like vLLM, no new sequence is admitted in a step that had to preempt.
func (e *engine) schedule(now time.Time) []stepPlan {
	budget := e.p.MaxNumBatchedTokens
	var plan []stepPlan
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		n := min(s.numTokens()-s.numComputed, budget)
		if n <= 0 {
			continue
		}
		draft := e.draftLen(s, n, budget)
		for !e.reserve(s, s.numComputed+n+draft) {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			preempted = true
			if victim == s {
				break
			}
		}
		if s.state != seqRunning {
			break
		}
		e.cacheBlocks(s, s.numComputed+n)
		plan = append(plan, stepPlan{s, n, draft})
		budget -= n + draft
	}
	for !preempted && len(e.waiting) > 0 && len(e.running) < e.p.MaxNumSeqs && budget > 0 {
		s := e.waiting[0]
		local, loaded, fits := -1, 0, true
		if len(s.blocks) == 0 {
			local, loaded, fits = e.hitPrefixCache(s, budget)
		}
		n := min(s.numTokens()-s.numComputed, budget)
		if !fits || !e.reserve(s, s.numComputed+n) {
			// Not scheduled, so its load from the offload tier is not
			// issued either (vLLM asks the connector only for a request
			// it can allocate): the blocks meant for it hold nothing.
			e.kv.forget(s.blocks[len(s.blocks)-loaded:])
			e.loaded -= loaded
			e.free(s)
			s.numComputed = 0
			break
		}
		if local >= 0 {
			e.noteQuery(s, local, loaded)
		}
		if loaded > 0 {
			e.metrics.offloadLoad(loaded)
		}
		e.waiting = e.waiting[1:]
		s.state = seqRunning
		e.running = append(e.running, s)
		s.mu.Lock()
		if s.truth.FirstScheduled == 0 {
			s.truth.FirstScheduled = now.Sub(s.arrival)
		}
		s.mu.Unlock()
		e.cacheBlocks(s, s.numComputed+n)
		plan = append(plan, stepPlan{s, n, 0})
		budget -= n
	}
	return plan
}

// draftLen is how many draft tokens a running sequence verifies this step:
// spec_draft_tokens when it is decoding, fewer when its output budget or
// the step's token budget is nearly spent (as vLLM's scheduler does).
func (e *engine) draftLen(s *seq, n, budget int) int {
	if e.p.SpecDraftTokens == 0 || s.pooling || n != 1 || len(s.output) == 0 || s.numComputed != s.numTokens()-1 {
		return 0
	}
	return max(0, min(e.p.SpecDraftTokens, s.maxTokens-len(s.output)-1, budget-n))
}

// cacheBlocks enters the full blocks of s's first n tokens in the prefix
// cache as soon as they are scheduled, as vLLM's KV cache manager does when
// it allocates them: the step computes them before any later step reads
// them, and a sequence admitted later in the same step (another choice of
// an n > 1 request, or the same prompt sent twice at once) already finds
// them.
func (e *engine) cacheBlocks(s *seq, n int) {
	full := n / e.p.BlockSize
	if full <= s.committed {
		return
	}
	hashes := s.blockHashes(full, e.p.BlockSize)
	for ; s.committed < full; s.committed++ {
		e.kv.commit(s.blocks[s.committed], hashes[s.committed])
	}
}

// hitPrefixCache gives a sequence the cached blocks of its longest cached
// prefix, and the blocks after them that the offload tier has, loaded back.
// At least one token is always left to compute. It returns the tokens
// found in the cache and the blocks loaded; fits is false (and nothing is
// loaded) when the load and the step's chunk of s (up to budget tokens)
// would need more blocks than are free.
func (e *engine) hitPrefixCache(s *seq, budget int) (local, loaded int, fits bool) {
	bs := e.p.BlockSize
	full := (s.numTokens() - 1) / bs
	hashes := s.blockHashes(full, bs)
	hits := e.kv.lookup(hashes)
	e.kv.take(hits)
	s.blocks = append(s.blocks[:0], hits...)
	s.numComputed = len(hits) * bs
	s.committed = len(hits)
	local = s.numComputed
	loaded, fits = e.loadOffloaded(s, hashes[len(hits):], budget)
	return local, loaded, fits
}

// noteQuery records, once per sequence, the prefix lookup of its first
// admission: local tokens found in the cache, loaded blocks from the
// offload tier.
func (e *engine) noteQuery(s *seq, local, loaded int) {
	bs := e.p.BlockSize
	if !s.queried {
		s.queried = true
		e.metrics.prefixQuery(s.numTokens(), local)
		if e.kv.offload != nil {
			e.metrics.offloadQuery(s.numTokens()-local, loaded*bs)
		}
		s.mu.Lock()
		s.truth.CachedTokens = s.numComputed
		s.truth.OffloadTokens = loaded * bs
		s.mu.Unlock()
	}
}

// loadOffloaded continues a prefix hit in the offload tier: the blocks of
// hashes (those after the cache's hits) found there are loaded back into
// fresh cache blocks, as many as are free, and charged to this step. Like
// vLLM's allocation, it first checks that the loaded blocks and those of
// the step's chunk (up to budget tokens) are free, and when they are not
// it loads (and evicts) nothing and says so.
func (e *engine) loadOffloaded(s *seq, hashes []uint64, budget int) (int, bool) {
	if e.kv.offload == nil || len(hashes) == 0 {
		return 0, true
	}
	n := min(e.kv.offload.match(hashes), e.kv.numFree())
	if n == 0 {
		return 0, true
	}
	bs := e.p.BlockSize
	t := s.numComputed + n*bs
	if need := (t+min(s.numTokens()-t, budget)+bs-1)/bs - len(s.blocks); need > e.kv.numFree() {
		return 0, false
	}
	ids, ok := e.kv.allocate(n)
	if !ok {
		return 0, false
	}
	for i, id := range ids {
		e.kv.commit(id, hashes[i])
	}
	s.blocks = append(s.blocks, ids...)
	s.numComputed += n * e.p.BlockSize
	s.committed += n
	e.loaded += n
	return n, true
}

// reserve makes sure s has blocks for its first n tokens.
func (e *engine) reserve(s *seq, n int) bool {
	need := (n+e.p.BlockSize-1)/e.p.BlockSize - len(s.blocks)
	if need <= 0 {
		return true
	}
	ids, ok := e.kv.allocate(need)
	if !ok {
		return false
	}
	s.blocks = append(s.blocks, ids...)
	return true
}

// preempt frees a running sequence's blocks and puts it back at the front of
// the queue; it recomputes its prompt and output when readmitted.
func (e *engine) preempt(s *seq) {
	e.free(s)
	s.numComputed = 0
	s.state = seqWaiting
	e.waiting = append([]*seq{s}, e.waiting...)
	e.preemptions++
	e.metrics.preemption()
	s.mu.Lock()
	s.truth.Preemptions++
	s.mu.Unlock()
}

// maxStepMS is the longest modelled step, in ms: an hour.
const maxStepMS = 3_600_000

// stepDuration is the modelled time of a step: fixed + per prefill token
// (and per draft token verified) + per sequence + per context token + per
// block loaded from the offload tier, times the slowdown (and the
// decode slowdown when it computes no prompt token), times the jitter.
func (e *engine) stepDuration(st Step) time.Duration {
	ms := e.p.StepFixedMS +
		float64(st.PrefillTokens)*e.p.PrefillTokenUS/1e3 +
		float64(st.Seqs)*e.p.SeqUS/1e3 +
		float64(st.ContextTokens)*e.p.ContextTokenNS/1e6 +
		float64(st.DraftTokens)*e.p.PrefillTokenUS/1e3 +
		float64(st.LoadedBlocks)*e.p.KVOffloadLoadUS/1e3
	ms *= e.p.Slowdown
	if st.PrefillTokens == 0 {
		ms *= e.p.DecodeSlowdown
	}
	if e.p.Jitter > 0 {
		z := max(-3, min(3, e.rng.NormFloat64()))
		ms *= max(0, 1+e.p.Jitter*z)
	}
	// The knobs' maxima keep each term finite; the sum of a huge batch
	// could still pass what a Duration holds.
	return time.Duration(math.Round(min(ms, maxStepMS) * 1e6))
}

// finishStep applies a step's work at its end: computed tokens advance and
// every sequence that has computed all
// its tokens gets a new one (its first token when its prefill completes).
func (e *engine) finishStep(plan []stepPlan, at time.Time) {
	tokens := 0   // as vLLM's iteration stats count them
	accepted := 0 // draft tokens accepted
	defer func() { e.metrics.iteration(tokens) }()
	for _, ps := range plan {
		s := ps.s
		if s.state != seqRunning {
			continue
		}
		s.numComputed += ps.numNew
		if s.numComputed < s.numTokens() {
			continue
		}
		if s.pooling {
			tokens += s.promptLen
			e.metrics.pooled(s.promptLen)
			s.state = seqDone
			e.running = remove(e.running, s)
			e.free(s)
			s.drop()
			s.deliver(nil, at, "stop")
			continue
		}
		emit := 1
		if ps.draft > 0 {
			// The accepted drafts' KV was computed by the verification.
			a := s.gen.accept(ps.draft, e.p.SpecAcceptProb)
			s.numComputed += a
			emit += a
			accepted += a
			e.metrics.specDraft(ps.draft, a)
			s.mu.Lock()
			s.truth.SpecAccepted = append(s.truth.SpecAccepted, a)
			s.mu.Unlock()
		}
		ids := make([]int, emit)
		for i := range ids {
			ids[i] = s.gen.next()
			s.output = append(s.output, ids[i])
			e.metrics.generated(len(s.output) == 1, s.promptLen)
			tokens++
			if len(s.output) == 1 {
				tokens += s.promptLen
			}
		}
		finish := ""
		if len(s.output) >= s.maxTokens {
			finish = s.stopAt
			s.state = seqDone
			e.running = remove(e.running, s)
			e.free(s)
			s.drop()
		}
		s.deliver(ids, at, finish)
	}
	e.mu.Lock()
	e.stats.Steps++
	if accepted > 0 {
		e.steps.setLastAccepted(accepted)
	}
	e.mu.Unlock()
}

func (e *engine) publish() {
	e.mu.Lock()
	e.stats.Running = len(e.running)
	e.stats.Waiting = len(e.waiting) + len(e.inbox)
	e.stats.KVUsage = e.kv.usage()
	e.mu.Unlock()
}
