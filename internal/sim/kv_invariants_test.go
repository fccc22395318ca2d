package sim

import (
	"math/rand/v2"
	"testing"
	"time"
)

// checkKV checks the KV cache's books against the live sequences: each
// block's ref count is the number of sequences holding it, the free queue
// holds exactly the blocks nobody holds (once each), and every cached hash
// names a block that holds it.
func checkKV(t *testing.T, e *engine, live []*seq) {
	t.Helper()
	refs := make([]int, len(e.kv.blocks))
	for _, s := range live {
		seen := map[int]bool{}
		for _, id := range s.blocks {
			if seen[id] {
				t.Fatalf("seq holds block %d twice", id)
			}
			seen[id] = true
			refs[id]++
		}
	}
	inFree := map[int]bool{}
	for el := e.kv.free.Front(); el != nil; el = el.Next() {
		id := el.Value.(int)
		if inFree[id] {
			t.Fatalf("block %d twice in free", id)
		}
		inFree[id] = true
	}
	for id, b := range e.kv.blocks {
		if b.ref != refs[id] {
			t.Fatalf("block %d ref %d, held by %d", id, b.ref, refs[id])
		}
		if (b.ref == 0) != inFree[id] {
			t.Fatalf("block %d ref %d inFree %v", id, b.ref, inFree[id])
		}
	}
	for h, id := range e.kv.cached {
		b := e.kv.blocks[id]
		if !b.hashed || b.hash != h {
			t.Fatalf("cached %x -> %d hashed %v hash %x", h, id, b.hashed, b.hash)
		}
	}
}

// TestEngineKVInvariants drives the engine directly with random arrivals,
// shared prefixes, aborts, a KV cache small enough to preempt, an offload
// tier of varied capacity and speculative decoding of varied draft length,
// and checks after every step that no block is leaked, freed twice or
// cached under a hash it does not hold, that no sequence outgrows
// max_tokens, that the offload tier keeps to its capacity, and that the
// blocks the steps were charged for loading are those the metrics count.
func TestEngineKVInvariants(t *testing.T) {
	for seed := range 30 {
		p := testParams()
		p.NumKVBlocks, p.BlockSize, p.MaxNumBatchedTokens, p.MaxModelLen, p.MaxNumSeqs = 40, 16, 256, 512, 8
		p.KVOffloadBlocks = 1 + seed%20
		p.SpecDraftTokens = seed % 4
		e := newEngine(p, newMetrics(p))
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		var live []*seq
		stepLoaded := 0
		prefixes := [][]int{engineSeq(100, 200, 1).prompt, engineSeq(5000, 300, 1).prompt}
		for step := 0; step < 400; step++ {
			if rng.IntN(3) == 0 {
				n := 20 + rng.IntN(300)
				s := engineSeq(10000*step, n, 1+rng.IntN(40))
				if rng.IntN(2) == 0 {
					pre := prefixes[rng.IntN(2)]
					copy(s.prompt, pre[:min(len(pre), n-1)])
				}
				e.submit(s)
				live = append(live, s)
			}
			if rng.IntN(10) == 0 && len(live) > 0 {
				e.abort(live[rng.IntN(len(live))])
			}
			e.drainInbox()
			plan := e.schedule(time.Now())
			stepLoaded += e.describe(time.Now(), plan, 0).LoadedBlocks
			e.finishStep(plan, time.Now())
			var keep []*seq
			for _, s := range live {
				if s.state != seqDone {
					keep = append(keep, s)
				}
			}
			live = keep
			checkKV(t, e, live)
			for _, s := range live {
				if s.state == seqWaiting && len(s.blocks) > 0 {
					t.Fatalf("seed %d step %d: a waiting sequence holds %d blocks", seed, step, len(s.blocks))
				}
				if len(s.output) > s.maxTokens {
					t.Fatalf("output %d > max %d", len(s.output), s.maxTokens)
				}
			}
		}
		for len(live) > 0 {
			e.drainInbox()
			plan := e.schedule(time.Now())
			stepLoaded += e.describe(time.Now(), plan, 0).LoadedBlocks
			e.finishStep(plan, time.Now())
			var keep []*seq
			for _, s := range live {
				if s.state != seqDone {
					keep = append(keep, s)
				}
			}
			live = keep
		}
		checkKV(t, e, nil)
		if int64(stepLoaded) != e.metrics.offloadLoaded {
			t.Errorf("seed %d: steps loaded %d, metric %d", seed, stepLoaded, e.metrics.offloadLoaded)
		}
		if e.preemptions == 0 || e.metrics.offloadLoaded == 0 || (p.SpecDraftTokens > 0) != (e.metrics.specDrafts > 0) {
			t.Errorf("seed %d exercised too little: %d preemptions, %d blocks loaded, %d drafts", seed, e.preemptions, e.metrics.offloadLoaded, e.metrics.specDrafts)
		}
		if e.kv.free.Len() != len(e.kv.blocks) {
			t.Fatalf("seed %d: %d of %d blocks free once all sequences ended", seed, e.kv.free.Len(), len(e.kv.blocks))
		}
		if e.kv.offload != nil && e.kv.offload.order.Len() > p.KVOffloadBlocks {
			t.Fatalf("seed %d: offload tier holds %d blocks, capacity %d", seed, e.kv.offload.order.Len(), p.KVOffloadBlocks)
		}
	}
}
