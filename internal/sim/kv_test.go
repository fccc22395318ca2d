package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKVCache(t *testing.T) {
	c := newKVCache(4, 16, true)
	require.Equal(t, 4, c.numFree())
	a, ok := c.allocate(3)
	require.True(t, ok)
	require.Equal(t, 1, c.numFree())
	_, ok = c.allocate(2)
	require.False(t, ok, "only one block is free")

	h0 := blockHash(0, []int{1, 2})
	h1 := blockHash(h0, []int{3, 4})
	c.commit(a[0], h0)
	c.commit(a[1], h1)
	require.Equal(t, []int{a[0], a[1]}, c.lookup([]uint64{h0, h1, 99}))

	c.release(a)
	require.Equal(t, 4, c.numFree(), "cached blocks nobody uses count as free")
	require.Equal(t, []int{a[0], a[1]}, c.lookup([]uint64{h0, h1}), "and stay findable")

	// Taking a cached block removes it from the free queue.
	c.take([]int{a[0]})
	require.Equal(t, 3, c.numFree())
	c.release([]int{a[0]})

	// Allocation takes the unhashed blocks first, then evicts the
	// sequence's last block (h1) before its first (h0).
	_, ok = c.allocate(2)
	require.True(t, ok)
	require.Equal(t, []int{a[0], a[1]}, c.lookup([]uint64{h0, h1}), "unhashed blocks went first")
	_, ok = c.allocate(1)
	require.True(t, ok)
	require.Equal(t, []int{a[0]}, c.lookup([]uint64{h0, h1}), "h1 evicted, h0 kept")
	_, ok = c.allocate(1)
	require.True(t, ok)
	require.Empty(t, c.lookup([]uint64{h0}))
	require.InDelta(t, 1.0, c.usage(), 1e-9)
}

func TestKVCacheNoPrefix(t *testing.T) {
	c := newKVCache(2, 16, false)
	a, _ := c.allocate(1)
	h := blockHash(0, []int{1})
	c.commit(a[0], h)
	require.Empty(t, c.lookup([]uint64{h}))
}

func TestBlockHashChains(t *testing.T) {
	require.Equal(t, blockHash(0, []int{1, 2}), blockHash(0, []int{1, 2}))
	require.NotEqual(t, blockHash(0, []int{1, 2}), blockHash(1, []int{1, 2}), "the parent is part of the hash")
	require.NotEqual(t, blockHash(0, []int{1, 2}), blockHash(0, []int{2, 1}))
}

func TestStepLogRing(t *testing.T) {
	var l stepLog
	for i := range stepLogSize + 10 {
		l.add(Step{Seqs: i})
	}
	last := l.last(3)
	require.Equal(t, []int{stepLogSize + 7, stepLogSize + 8, stepLogSize + 9}, []int{last[0].Seqs, last[1].Seqs, last[2].Seqs})
	require.Len(t, l.last(1<<20), stepLogSize)
	require.Equal(t, 10, l.last(stepLogSize)[0].Seqs, "oldest kept first")
	var short stepLog
	short.add(Step{Seqs: 1})
	short.add(Step{Seqs: 2})
	require.Equal(t, []Step{{Seqs: 1}, {Seqs: 2}}, short.last(5))
}

// TestPrefixCacheSameStep: a sequence admitted in the same step as another
// with the same prompt already finds that one's full blocks, since blocks
// enter the cache when they are scheduled (as in vLLM's KV cache manager),
// not when the step ends. This is how the n choices of one request share
// their prompt.
func TestPrefixCacheSameStep(t *testing.T) {
	p := testParams()
	e := newEngine(p, newMetrics(p))
	prompt := make([]int, 100)
	for i := range prompt {
		prompt[i] = i + 1
	}
	a := &seq{prompt: prompt, promptLen: len(prompt), maxTokens: 1, notify: make(chan struct{}, 1)}
	b := &seq{prompt: prompt, promptLen: len(prompt), maxTokens: 1, notify: make(chan struct{}, 1)}
	e.submit(a)
	e.submit(b)
	e.drainInbox()
	plan := e.schedule(time.Now())
	require.Len(t, plan, 2)
	require.Equal(t, 100, plan[0].numNew)
	require.Equal(t, 4, plan[1].numNew, "6 full blocks of 16 come from a's")
	require.Equal(t, 96, b.truth.CachedTokens)
	require.Equal(t, a.blocks[:6], b.blocks[:6])
}
