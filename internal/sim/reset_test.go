package sim

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestResetPrefixCache: after POST /reset_prefix_cache a repeated prompt
// finds nothing cached, and a reset while a request holds blocks is
// refused with 409.
func TestResetPrefixCache(t *testing.T) {
	p := testParams()
	s, base := start(t, Config{Params: &p, Tokenizer: wordTokenizer{}})
	prompt := words(1000, 5)
	send := func(id string, maxTokens int) {
		r := post(context.Background(), base+"/v1/completions", completionBody(prompt, maxTokens, true), map[string]string{"X-Request-Id": id})
		require.NoError(t, r.err)
		require.True(t, r.done())
	}
	reset := func() int {
		resp, err := testClient.Post(base+"/reset_prefix_cache", "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	send("cold", 2)
	send("warm", 2)
	require.Equal(t, http.StatusOK, reset())
	send("after", 2)
	warm, _ := s.Truth("warm")
	after, _ := s.Truth("after")
	require.Equal(t, 992, warm.CachedTokens)
	require.Zero(t, after.CachedTokens, "the reset emptied the cache")

	done := make(chan struct{})
	go func() {
		defer close(done)
		post(context.Background(), base+"/v1/completions", completionBody(prompt, 2000, true), nil)
	}()
	require.Eventually(t, func() bool { return s.eng.snapshot().Running == 1 }, 10*time.Second, time.Millisecond)
	require.Equal(t, http.StatusConflict, reset(), "a running request holds blocks")
	<-done
	require.Equal(t, http.StatusOK, reset())
}

// TestResetPrefixCacheOffload: reset_external=true empties the offload
// tier too; a plain reset keeps it, as vLLM keeps its connector's cache.
func TestResetPrefixCacheOffload(t *testing.T) {
	kv := newKVCache(4, 16, true)
	kv.offload = newOffloadTier(8, func() {})
	e := &engine{kv: kv, wake: make(chan struct{}, 1)}
	kv.offload.store(7)
	go func() {
		for range e.wake {
			e.drainInbox()
		}
	}()
	defer close(e.wake)
	ok, err := e.resetPrefixCache(t.Context(), false)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 1, kv.offload.match([]uint64{7}))
	ok, err = e.resetPrefixCache(t.Context(), true)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, kv.offload.match([]uint64{7}))
}
