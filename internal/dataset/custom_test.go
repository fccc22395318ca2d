package dataset

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/tokenizer"
)

func TestCustom(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	cfg := llama3Config(t)
	// Prompt lengths of the chat-formatted prompts, as vLLM counts them
	// (the template's BOS plus the one the tokenizer adds), checked against
	// Python's jinja2 and tokenizers on the same files.
	got, err := Load(context.Background(), Spec{Name: Custom, Path: fixture("custom.jsonl"), DisableShuffle: true, TokenizerConfig: cfg}, tok)
	require.NoError(t, err)
	require.Len(t, got, 1000, "oversampled to the default 1000")
	type row struct {
		start             string
		promptLen, outLen int
		id                string
	}
	want := []row{
		{"What is the capital of India?", 18, 256, "0"},
		{"Écris un haïku sur la pluie d'automne.", 27, 64, "1"},
		{"東京の人口は何人ですか？", 26, 256, "2"},
		{"<|eot_id|>", 11, 8, "3"},
		{"Explain, step by step", 24, 256, "4"},
	}
	const head = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
	for i, w := range want {
		s := got[i]
		require.True(t, strings.HasPrefix(s.Prompt, head), s.Prompt)
		assert.True(t, strings.HasPrefix(s.Prompt[len(head):], w.start), s.Prompt)
		assert.True(t, strings.HasSuffix(s.Prompt, "<|start_header_id|>assistant<|end_header_id|>\n\n"), s.Prompt)
		assert.Equal(t, w.promptLen, s.PromptLen, "row %d", i)
		assert.Equal(t, w.outLen, s.OutputLen, "row %d", i)
		assert.Equal(t, w.id, s.RequestID)
	}
	for i, s := range got {
		assert.Equal(t, strconv.Itoa(i), s.RequestID)
	}
}

func TestCustomOptions(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	cfg := llama3Config(t)
	load := func(s Spec) []Sample {
		t.Helper()
		s.Name, s.Path, s.TokenizerConfig = Custom, fixture("custom.jsonl"), cfg
		got, err := Load(context.Background(), s, tok)
		require.NoError(t, err)
		return got
	}
	t.Run("skip chat template", func(t *testing.T) {
		got := load(Spec{NumPrompts: 5, DisableShuffle: true, SkipChatTemplate: true, Custom: CustomParams{OutputLen: 99}})
		assert.Equal(t, "What is the capital of India?", got[0].Prompt)
		assert.Equal(t, 8, got[0].PromptLen)
		assert.Equal(t, 99, got[0].OutputLen)
		assert.Equal(t, 64, got[1].OutputLen, "per-row output_tokens wins")
		assert.Equal(t, "", got[3].Prompt)
		assert.Equal(t, 1, got[3].PromptLen, "an empty prompt is just BOS")
	})
	t.Run("all rows", func(t *testing.T) {
		assert.Len(t, load(Spec{NumPrompts: -1}), 5)
	})
	t.Run("no oversample", func(t *testing.T) {
		assert.Len(t, load(Spec{NumPrompts: 50, NoOversample: true}), 5)
	})
	t.Run("shuffle honours the seed", func(t *testing.T) {
		order := func(seed int64) string {
			var b strings.Builder
			for _, s := range load(Spec{NumPrompts: 5, Seed: seed, SkipChatTemplate: true}) {
				b.WriteString(strings.TrimSpace(s.Prompt) + "|")
			}
			return b.String()
		}
		assert.Equal(t, order(0), order(0))
		assert.NotEqual(t, order(0), order(5))
		// vLLM's order for seed 0 (CPython's random.shuffle; see crosscheck.py).
		assert.Equal(t, "東京の人口は何人ですか？簡単に答えてください。|Écris un haïku sur la pluie d'automne.|What is the capital of India?|Explain, step by step, how a bicycle gear works.||", order(0))
	})
	t.Run("oversampling", func(t *testing.T) {
		got := load(Spec{NumPrompts: 9, DisableShuffle: true, SkipChatTemplate: true, RequestIDPrefix: "c"})
		require.Len(t, got, 9)
		var prompts, ids []string
		for _, s := range got {
			prompts = append(prompts, strings.TrimSpace(s.Prompt))
			ids = append(ids, s.RequestID)
		}
		assert.Equal(t, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}, ids)
		assert.Equal(t, []string{
			"What is the capital of India?",
			"Écris un haïku sur la pluie d'automne.",
			"東京の人口は何人ですか？簡単に答えてください。",
			"",
			"Explain, step by step, how a bicycle gear works.",
			"",
			"",
			"What is the capital of India?",
			"東京の人口は何人ですか？簡単に答えてください。",
		}, prompts, "vLLM's oversampling for seed 0 (see crosscheck.py)")
	})
}

func TestCustomTrace(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	want := []time.Duration{0, 500 * time.Millisecond, time.Second, 3250 * time.Millisecond, 5 * time.Second}
	// Arrivals are trace time whatever TraceSpeed says: the engine scales.
	for _, speed := range []float64{0, 2} {
		got, err := Load(context.Background(), Spec{
			Name: Custom, Path: fixture("custom_trace.jsonl"), SkipChatTemplate: true,
			TraceReplay: true, TraceSpeed: speed, NumPrompts: 100,
		}, tok)
		require.NoError(t, err)
		require.Len(t, got, 5, "a trace is never oversampled")
		var arrivals []time.Duration
		for _, s := range got {
			assert.True(t, s.HasArrival)
			arrivals = append(arrivals, s.Arrival)
		}
		assert.Equal(t, want, arrivals, "speed %v", speed)
		assert.Equal(t, "Third in time, fourth in the file.", got[2].Prompt)
		assert.Equal(t, []int{16, 32, 256, 256, 256}, []int{got[0].OutputLen, got[1].OutputLen, got[2].OutputLen, got[3].OutputLen, got[4].OutputLen})
	}
}

func TestCustomErrors(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	nullPrompt := writeTemp(t, "null.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": null}\n")
	latin1 := writeTemp(t, "latin1.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": \"caf\xe9\"}\n")
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"missing prompt", Spec{Path: fixture("custom_bad_missing_prompt.jsonl"), SkipChatTemplate: true},
			fixture("custom_bad_missing_prompt.jsonl") + `:3: missing field "prompt"`},
		{"malformed line", Spec{Path: fixture("custom_bad_malformed.jsonl"), SkipChatTemplate: true},
			fixture("custom_bad_malformed.jsonl") + `:2: malformed JSON: unexpected end of JSON input`},
		{"bad output_tokens", Spec{Path: fixture("custom_bad_output_tokens.jsonl"), SkipChatTemplate: true},
			fixture("custom_bad_output_tokens.jsonl") + `:2: field "output_tokens": want a positive integer, got "many"`},
		{"empty file", Spec{Path: fixture("custom_empty.jsonl"), SkipChatTemplate: true},
			fixture("custom_empty.jsonl") + `: no rows`},
		{"trace without timestamps", Spec{Path: fixture("custom.jsonl"), SkipChatTemplate: true, TraceReplay: true},
			fixture("custom.jsonl") + `:1: trace replay needs a "timestamp" on every row`},
		{"no chat template", Spec{Path: fixture("custom.jsonl"), TokenizerConfig: &TokenizerConfig{}},
			"the tokenizer has no chat template: give a tokenizer_config.json with chat_template (Spec.TokenizerConfig) or skip the chat template"},
		{"no path", Spec{}, "no dataset path"},
		{"null prompt", Spec{Path: nullPrompt, SkipChatTemplate: true},
			nullPrompt + `:2: field "prompt": want a string, got null`},
		// encoding/json would read the byte as U+FFFD; vLLM refuses the file.
		{"prompt not UTF-8", Spec{Path: latin1, SkipChatTemplate: true},
			latin1 + `:2: prompt: byte 0xe9 is not UTF-8; vLLM reads the file as UTF-8 and refuses it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = Custom
			_, err := Load(context.Background(), tt.spec, tok)
			require.Error(t, err)
			assert.Equal(t, "load custom dataset: "+tt.want, err.Error())
		})
	}
}

func TestCustomLongPrompt(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	got, err := Load(context.Background(), Spec{Name: Custom, Path: fixture("custom_long.jsonl"), NumPrompts: -1, DisableShuffle: true, SkipChatTemplate: true}, tok)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Greater(t, got[0].PromptLen, 4000, "custom keeps long prompts")
	assert.Equal(t, 50, got[0].OutputLen)
	assert.Equal(t, 256, got[1].OutputLen)
}

// TestConfigBesideTokenizer loads a tokenizer from a model directory and
// finds the chat template in the tokenizer_config.json beside it.
func TestConfigBesideTokenizer(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, fixtures.Tokenizer(t, fixtures.Llama3), filepath.Join(dir, "tokenizer.json"))
	mod, err := fixtures.TokenizersModuleDir()
	require.NoError(t, err)
	copyFile(t, filepath.Join(mod, "test", "data", "meta-llama-3-8b-instruct", "tokenizer_config.json"), filepath.Join(dir, "tokenizer_config.json"))
	tok, err := tokenizer.FromFile(filepath.Join(dir, "tokenizer.json"))
	require.NoError(t, err)
	defer tok.Close()
	got, err := Load(context.Background(), Spec{Name: Custom, Path: fixture("custom.jsonl"), NumPrompts: 1, DisableShuffle: true}, tok)
	require.NoError(t, err)
	assert.Equal(t, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is the capital of India?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", got[0].Prompt)
	assert.Equal(t, 18, got[0].PromptLen)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o644))
}

// TestConfigFromHubCache loads a tokenizer by model id from a Hugging Face
// cache laid out on disk and finds the chat template in its snapshot.
func TestConfigFromHubCache(t *testing.T) {
	cache := t.TempDir()
	snap := filepath.Join(cache, "models--acme--tiny-chat", "snapshots", "abc123")
	require.NoError(t, os.MkdirAll(snap, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "models--acme--tiny-chat", "refs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cache, "models--acme--tiny-chat", "refs", "main"), []byte("abc123"), 0o644))
	copyFile(t, fixtures.Tokenizer(t, fixtures.Llama3), filepath.Join(snap, "tokenizer.json"))
	mod, err := fixtures.TokenizersModuleDir()
	require.NoError(t, err)
	copyFile(t, filepath.Join(mod, "test", "data", "meta-llama-3-8b-instruct", "tokenizer_config.json"), filepath.Join(snap, "tokenizer_config.json"))
	t.Setenv("HF_HUB_CACHE", cache)
	tok, err := tokenizer.FromPretrained(context.Background(), "acme/tiny-chat", tokenizer.Hub{})
	require.NoError(t, err)
	defer tok.Close()
	got, err := Load(context.Background(), Spec{Name: Custom, Path: fixture("custom.jsonl"), NumPrompts: 1, DisableShuffle: true}, tok)
	require.NoError(t, err)
	assert.Equal(t, 18, got[0].PromptLen)
}
