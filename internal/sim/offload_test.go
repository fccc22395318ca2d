package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// turnResult is the ground truth of one turn of a conversation.
type turnResult struct {
	truth Truth
	// serviceMS is the ground truth's first-token time less its queue
	// time: the modelled duration of the prefill step(s), free of the
	// machine's scheduling noise.
	serviceMS float64
}

// conversation runs a three-turn chat with the history resent each turn,
// with other users' requests between the turns (they evict a small KV
// cache), and returns each turn's ground truth.
func conversation(tb testing.TB, p Params) []turnResult {
	tb.Helper()
	srv, url := start(tb, Config{Params: &p})
	ctx := context.Background()
	msgs := []any{map[string]any{"role": "system", "content": "You answer questions about" + words(300, 1)}, user("First question:" + words(200, 2))}
	var out []turnResult
	for turn := range 3 {
		id := fmt.Sprintf("conv-%d", turn)
		a := readChat(tb, post(ctx, url+"/v1/chat/completions", chatReq(msgs, map[string]any{"max_tokens": 16}), map[string]string{"X-Request-Id": id}))
		tr, ok := srv.Truth(id)
		require.True(tb, ok)
		require.NotEmpty(tb, tr.TokenMS)
		out = append(out, turnResult{truth: tr, serviceMS: tr.TokenMS[0] - tr.QueueMS})
		msgs = append(msgs, map[string]any{"role": "assistant", "content": a.content}, user("Next question:"+words(40, turn+3)))
		for k := range 4 { // other users
			r := post(ctx, url+"/v1/completions", map[string]any{"prompt": words(600, 100+10*turn+k), "max_tokens": 2}, nil)
			require.Equal(tb, 200, r.status, "%s", r.body)
		}
	}
	m := scrape(tb, srv)
	if p.KVOffloadBlocks > 0 {
		assert.Contains(tb, m, "vllm:kv_offload_loaded_blocks_total")
	}
	return out
}

// TestKVCapacityShowsInLaterTurnTTFT runs the same conversation on a big
// KV cache, a tiny one, and the tiny one with an offload tier: the second
// and third turns' TTFT (ground truth, the modelled prefill) is short when
// the history's blocks survive, long when the tiny cache lost them, and in
// between when they come back from the offload tier at a cost per block.
func TestKVCapacityShowsInLaterTurnTTFT(t *testing.T) {
	base := testParams()
	base.PrefillTokenUS, base.StepFixedMS = 200, 2 // 0.2 ms a prompt token
	base.MaxModelLen, base.MaxNumBatchedTokens = 2048, 4096

	big := base
	tiny := base
	tiny.NumKVBlocks = 128 // one max_model_len sequence; the other users evict the history
	offload := tiny
	offload.KVOffloadBlocks, offload.KVOffloadLoadUS = 4096, 100 // 0.1 ms to load a block of 16 tokens

	runs := map[string][]turnResult{"big": conversation(t, big), "tiny": conversation(t, tiny), "offload": conversation(t, offload)}
	for _, name := range []string{"big", "tiny", "offload"} {
		for i, r := range runs[name] {
			t.Logf("%-7s turn %d: prompt %4d cached %4d (offload %4d) prefill %6.1f ms, TTFT %6.1f ms",
				name, i+1, r.truth.PromptTokens, r.truth.CachedTokens, r.truth.OffloadTokens, r.serviceMS, r.truth.TTFTMS)
		}
	}
	for turn := 1; turn < 3; turn++ {
		b, s, o := runs["big"][turn], runs["tiny"][turn], runs["offload"][turn]
		require.Equal(t, b.truth.PromptTokens, s.truth.PromptTokens, "the same conversation")
		// The big cache keeps the whole history; the tiny one lost it.
		history := runs["big"][turn-1].truth.PromptTokens
		assert.GreaterOrEqual(t, b.truth.CachedTokens, history/16*16-16, "turn %d", turn+1)
		assert.Less(t, s.truth.CachedTokens, history/2, "turn %d", turn+1)
		// Every token the tiny cache recomputes costs 0.2 ms.
		recomputed := b.truth.CachedTokens - s.truth.CachedTokens
		assert.InDelta(t, float64(recomputed)*0.2, s.serviceMS-b.serviceMS, 0.01, "turn %d", turn+1)
		// The offload tier brings the history back, at 0.1 ms a block.
		assert.Equal(t, b.truth.CachedTokens, o.truth.CachedTokens, "turn %d", turn+1)
		assert.Greater(t, o.truth.OffloadTokens, history/2, "turn %d", turn+1)
		assert.InDelta(t, b.serviceMS+float64(o.truth.OffloadTokens/16)*0.1, o.serviceMS, 0.01, "turn %d", turn+1)
		assert.Less(t, o.serviceMS, s.serviceMS, "turn %d", turn+1)
	}
}

func TestOffloadMetrics(t *testing.T) {
	p := testParams()
	p.NumKVBlocks, p.MaxModelLen = 64, 1024
	p.KVOffloadBlocks = 2
	srv, url := start(t, Config{Params: &p})
	ctx := context.Background()
	first := words(200, 7)
	for _, prompt := range []string{first, words(900, 8), first} {
		r := post(ctx, url+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 1}, nil)
		require.Equal(t, 200, r.status, "%s", r.body)
	}
	m := scrape(t, srv)
	// The long second prompt evicts the first one's blocks into a tier of
	// two: the stores are counted, and the lookups of the connector too.
	assert.Contains(t, m, `vllm:kv_offload_stored_blocks_total{engine="0",model_name="sim-test"}`)
	assert.NotContains(t, m, `vllm:kv_offload_stored_blocks_total{engine="0",model_name="sim-test"} 0.0`)
	assert.True(t, strings.Contains(m, `vllm:external_prefix_cache_queries_total{engine="0",model_name="sim-test"}`))
}
