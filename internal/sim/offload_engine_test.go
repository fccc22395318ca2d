package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// engineSeq is a sequence for driving the engine directly: prompt tokens
// from..from+n-1, maxTokens outputs.
func engineSeq(from, n, maxTokens int) *seq {
	prompt := make([]int, n)
	for i := range prompt {
		prompt[i] = from + i
	}
	return &seq{prompt: prompt, promptLen: n, maxTokens: maxTokens, stopAt: "length",
		gen: (&vocab{ids: []int{1}, texts: map[int]string{1: " a"}}).stream(1), notify: make(chan struct{}, 1)}
}

// runStep plans one step, checks what it charges, and finishes it.
func runStep(tb testing.TB, e *engine) (Step, []stepPlan) {
	tb.Helper()
	plan := e.schedule(time.Now())
	st := e.describe(time.Now(), plan, 0)
	e.finishStep(plan, time.Now())
	return st, plan
}

// TestOffloadLoadOnlyForScheduled: a waiting sequence whose prefix is in
// the offload tier but which cannot get the rest of its blocks is not
// scheduled, so its load is not issued either (vLLM's scheduler asks the
// connector only for a request it can allocate): the step charges no
// loaded blocks, the blocks it did not load are not findable in the cache
// as if they had been, and no cached block was evicted to make room.
func TestOffloadLoadOnlyForScheduled(t *testing.T) {
	p := testParams()
	p.NumKVBlocks, p.BlockSize, p.MaxNumBatchedTokens = 16, 16, 4096
	p.KVOffloadBlocks = 100
	e := newEngine(p, newMetrics(p))

	a := engineSeq(1000, 64, 1) // 4 blocks, cached when done
	e.submit(a)
	e.drainInbox()
	for a.state != seqDone {
		runStep(t, e)
	}
	b := engineSeq(2000, 256, 1) // all 16 blocks: a's go to the offload tier
	e.submit(b)
	e.drainInbox()
	for b.state != seqDone {
		runStep(t, e)
	}
	require.Empty(t, e.kv.lookup(engineSeq(1000, 64, 1).blockHashes(4, 16)), "a's blocks left the cache")
	hold := engineSeq(3000, 224, 1000) // holds 14 blocks, 2 stay free
	e.submit(hold)
	e.drainInbox()
	runStep(t, e)
	runStep(t, e) // its first decode takes a 15th block
	require.Equal(t, 1, e.kv.numFree())

	// c starts with a's prompt: 4 blocks in the offload tier, a free
	// block to load one into, but 11 blocks needed.
	spare := e.kv.blocks[e.kv.free.Front().Value.(int)]
	require.True(t, spare.hashed, "the free block caches one of b's")
	c := engineSeq(1000, 164, 1)
	copy(c.prompt, engineSeq(1000, 64, 1).prompt)
	e.submit(c)
	e.drainInbox()
	st, plan := runStep(t, e)
	for _, ps := range plan {
		require.NotSame(t, c, ps.s, "c cannot be scheduled")
	}
	require.Zero(t, st.LoadedBlocks, "no load is issued for a sequence that is not scheduled")
	require.Empty(t, e.kv.lookup(c.blockHashes(1, 16)), "blocks not loaded are not in the cache")
	require.Equal(t, 1, e.kv.numFree())
	require.Zero(t, c.truth.OffloadTokens, "nothing loaded for c yet")
	require.Len(t, e.kv.lookup([]uint64{spare.hash}), 1, "a failed admission evicts nothing (vLLM checks the free blocks before it allocates)")
}
