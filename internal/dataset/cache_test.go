package dataset

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// cacheBase is a sharegpt spec on a copy of the fixture file, so that a
// test can change the file.
func cacheBase(tb testing.TB) Spec {
	tb.Helper()
	data, err := os.ReadFile(fixture("sharegpt.json"))
	require.NoError(tb, err)
	path := filepath.Join(tb.TempDir(), "sharegpt.json")
	require.NoError(tb, os.WriteFile(path, data, 0o644))
	return Spec{Name: ShareGPT, NumPrompts: 5, Seed: 3, Path: path, RequestIDPrefix: "s-", TokenizerConfig: llama3Config(tb)}
}

// TestCacheKey: an equal key reuses the samples (no Load runs), and any
// change to what makes the prompts loads them again.
func TestCacheKey(t *testing.T) {
	llama, bert := loadTokenizer(t, fixtures.Llama3), loadTokenizer(t, fixtures.BERT)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(tb testing.TB, s *Spec)
		bert   bool
	}{
		{name: "seed", change: func(_ testing.TB, s *Spec) { s.Seed++ }},
		{name: "num prompts", change: func(_ testing.TB, s *Spec) { s.NumPrompts++ }},
		{name: "dataset", change: func(_ testing.TB, s *Spec) { s.Name, s.Path = Random, "" }},
		{name: "request id prefix", change: func(_ testing.TB, s *Spec) { s.RequestIDPrefix = "t-" }},
		{name: "backend", change: func(_ testing.TB, s *Spec) { s.Backend = "openai-chat" }},
		{name: "output len", change: func(_ testing.TB, s *Spec) { s.ShareGPT.OutputLen = 9 }},
		{name: "shuffle", change: func(_ testing.TB, s *Spec) { s.DisableShuffle = true }},
		{name: "oversample", change: func(_ testing.TB, s *Spec) { s.NoOversample = true }},
		{name: "random params", change: func(_ testing.TB, s *Spec) { s.Random.InputLen = 77 }},
		{name: "chat template", change: func(_ testing.TB, s *Spec) {
			old := s.TokenizerConfig
			s.TokenizerConfig = &TokenizerConfig{Path: old.Path, ChatTemplate: old.ChatTemplate + " ", BOSToken: old.BOSToken, EOSToken: old.EOSToken}
		}},
		{name: "tokenizer", bert: true, change: func(_ testing.TB, s *Spec) {}},
		{name: "file content", change: func(tb testing.TB, s *Spec) {
			data, err := os.ReadFile(s.Path)
			require.NoError(tb, err)
			require.NoError(tb, os.WriteFile(s.Path, append(data, '\n'), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Cache
			base := cacheBase(t)
			first, err := c.Load(ctx, base, llama)
			require.NoError(t, err)
			again, err := c.Load(ctx, base, llama)
			require.NoError(t, err)
			assert.Equal(t, 1, c.Loads(), "an equal key loads once")
			assert.Equal(t, first, again)
			direct, err := Load(ctx, base, llama)
			require.NoError(t, err)
			assert.Equal(t, direct, again, "the cache returns what Load returns")

			changed := base
			tc.change(t, &changed)
			tok := llama
			if tc.bert {
				tok = bert
			}
			got, err := c.Load(ctx, changed, tok)
			require.NoError(t, err)
			assert.Equal(t, 2, c.Loads(), "a changed key loads again")
			want, err := Load(ctx, changed, tok)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// TestCacheCallerOwnsSlice: changing a returned slice does not change what
// the next caller gets.
func TestCacheCallerOwnsSlice(t *testing.T) {
	var c Cache
	base := cacheBase(t)
	llama := loadTokenizer(t, fixtures.Llama3)
	a, err := c.Load(context.Background(), base, llama)
	require.NoError(t, err)
	want := a[0].Prompt
	a[0].Prompt = "changed"
	b, err := c.Load(context.Background(), base, llama)
	require.NoError(t, err)
	assert.Equal(t, want, b[0].Prompt)
	assert.Equal(t, 1, c.Loads())
}

// TestCacheBound: the cache keeps at most MaxBytes, dropping the least
// recently used entry; a result larger than the bound is not kept.
func TestCacheBound(t *testing.T) {
	llama := loadTokenizer(t, fixtures.Llama3)
	ctx := context.Background()
	a := Spec{NumPrompts: 4, Seed: 1, Random: RandomParams{InputLen: 32}, TokenizerConfig: &TokenizerConfig{}}
	b, big := a, a
	b.Seed = 2
	big.NumPrompts = 40

	one, err := Load(ctx, a, llama)
	require.NoError(t, err)
	c := Cache{MaxBytes: samplesSize(one) * 3 / 2} // room for one small entry
	for _, s := range []Spec{a, b, a} {
		_, err := c.Load(ctx, s, llama)
		require.NoError(t, err)
		assert.LessOrEqual(t, c.Bytes(), c.MaxBytes)
	}
	assert.Equal(t, 3, c.Loads(), "b pushed a out")
	_, err = c.Load(ctx, a, llama)
	require.NoError(t, err)
	assert.Equal(t, 3, c.Loads(), "a is kept again")

	_, err = c.Load(ctx, big, llama)
	require.NoError(t, err)
	_, err = c.Load(ctx, big, llama)
	require.NoError(t, err)
	assert.Equal(t, 5, c.Loads(), "a result past the bound is not kept")
	assert.Equal(t, samplesSize(one), c.Bytes(), "nor does it push out what is kept")

	off := Cache{MaxBytes: -1}
	for range 2 {
		_, err := off.Load(ctx, a, llama)
		require.NoError(t, err)
	}
	assert.Equal(t, 2, off.Loads())
	assert.Zero(t, off.Bytes())
}
