package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/shard"
)

// TestShardsSplitOneSchedule runs one 4-way sharded schedule shard by
// shard and checks that together the shards send every request once, with
// the ids, prompts, LoRA choices and send times of the unsharded run.
func TestShardsSplitOneSchedule(t *testing.T) {
	srv := newStreamServer(t)
	cfg := Config{
		BaseURL: srv.URL, Backend: "openai-chat", Model: "m", RequestRate: 2000, Seed: 9,
		RequestIDPrefix: "t-", LoRAModules: []string{"a", "b", "c"},
	}
	const n = 23
	full, err := Run(t.Context(), cfg, samples(n))
	require.NoError(t, err)
	srv.mu.Lock()
	fullModels := map[string]string{}
	for k, id := range srv.ids {
		fullModels[id] = srv.models[k]
	}
	srv.mu.Unlock()
	seen := map[string]int{}
	for i := 1; i <= 4; i++ {
		c := cfg
		c.Shard = shard.Spec{Index: i, Count: 4}
		res, err := Run(t.Context(), c, samples(n))
		require.NoError(t, err)
		require.Equal(t, c.Shard.Indices(n), res.Indices)
		require.Len(t, res.Records, len(res.Indices))
		assert.Equal(t, full.Schedule, res.Schedule, "every shard computes the full schedule")
		for k, j := range res.Indices {
			r := res.Records[k]
			assert.True(t, r.Success, r.Error)
			assert.Equal(t, fmt.Sprintf("t-%d", j), r.RequestID)
			assert.Equal(t, full.Records[j].PromptLen, r.PromptLen)
			assert.Equal(t, full.Records[j].Scheduled, r.Scheduled, "request %d keeps the full schedule's time", j)
			seen[r.RequestID]++
		}
	}
	assert.Len(t, seen, n)
	for id, c := range seen {
		assert.Equal(t, 1, c, id)
	}
	// LoRA choices follow the request index, not the shard: request j's
	// model is the same in the sharded runs as in the full one.
	byID := map[string]string{}
	srv.mu.Lock()
	for k, id := range srv.ids[n:] {
		byID[id] = srv.models[n+k]
	}
	srv.mu.Unlock()
	for j := range n {
		id := fmt.Sprintf("t-%d", j)
		assert.Equal(t, fullModels[id], byID[id], "request %d", j)
	}
}

// TestShardStartAt checks that a shard waits for the start time and that
// too many shards for the requests is an error.
func TestShardStartAt(t *testing.T) {
	srv := newStreamServer(t)
	at := time.Now().Add(150 * time.Millisecond)
	res, err := Run(t.Context(), Config{BaseURL: srv.URL, Model: "m", StartAt: at, Shard: shard.Spec{Index: 2, Count: 2}}, samples(4))
	require.NoError(t, err)
	assert.False(t, res.Start.Before(at), "started at %v, before the start time %v", res.Start, at)
	assert.Equal(t, []int{1, 3}, res.Indices)

	_, err = Run(t.Context(), Config{BaseURL: srv.URL, Model: "m", Shard: shard.Spec{Index: 1, Count: 5}}, samples(4))
	assert.ErrorContains(t, err, "shard 1/5: 5 shards for 4 requests")
}
