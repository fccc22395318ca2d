package dataset

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

func TestRandomRerank(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	t.Run("reranker", func(t *testing.T) {
		got, err := Load(context.Background(), Spec{Name: RandomRerank, NumPrompts: 5, RequestIDPrefix: "q", Random: RandomParams{InputLen: 64, BatchSize: 2}}, tok)
		require.NoError(t, err)
		require.Len(t, got, 3)
		// Query: 64/2 - 1 separator - 1 special = 30 tokens; documents:
		// 64 - 30 - 1 separator - 1 special = 32 tokens.
		assert.Equal(t, 30, tok.Count(got[0].Prompt))
		for i, docs := range []int{2, 2, 1} {
			x := got[i]
			assert.Equal(t, got[0].Prompt, x.Prompt, "one query for all")
			require.Len(t, x.Documents, docs)
			for _, d := range x.Documents {
				assert.Equal(t, 32, tok.Count(d))
			}
			assert.Equal(t, (30+1)*docs+32*docs, x.PromptLen)
			assert.Zero(t, x.OutputLen)
			assert.Equal(t, "q"+string(rune('0'+i)), x.RequestID)
		}
	})
	t.Run("no reranker", func(t *testing.T) {
		got, err := Load(context.Background(), Spec{Name: RandomRerank, NumPrompts: 5, Random: RandomParams{InputLen: 64, BatchSize: 3, NoReranker: true}}, tok)
		require.NoError(t, err)
		require.Len(t, got, 2)
		for _, x := range got {
			require.Len(t, x.Inputs, 3, "query then two documents")
			assert.Empty(t, x.Prompt)
			assert.Equal(t, 63*3, x.PromptLen)
		}
		assert.Equal(t, got[0].Inputs[0], got[1].Inputs[0])
	})
	t.Run("no reranker needs batches", func(t *testing.T) {
		_, err := Load(context.Background(), Spec{Name: RandomRerank, NumPrompts: 5, Random: RandomParams{NoReranker: true}}, tok)
		assert.ErrorContains(t, err, "load random-rerank dataset: without a reranker, random-rerank needs more than one prompt and a batch size above one")
	})
}

func TestPrefixRepetition(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	spec := Spec{Name: PrefixRepetition, NumPrompts: 7, DisableShuffle: true, PrefixRepetition: PrefixRepetitionParams{PrefixLen: 16, SuffixLen: 8, NumPrefixes: 3, OutputLen: 5}}
	got, err := Load(context.Background(), spec, tok)
	require.NoError(t, err)
	require.Len(t, got, 6, "3 prefixes x (7/3 = 2) prompts")
	head := func(i int) []int { return tok.Encode(got[i].Prompt, false)[:12] }
	for i, s := range got {
		assert.Equal(t, 24, s.PromptLen)
		assert.Equal(t, 5, s.OutputLen)
		assert.Equal(t, strings.TrimSpace(string(rune('0'+i))), s.RequestID)
	}
	assert.Equal(t, head(0), head(1))
	assert.Equal(t, head(2), head(3))
	assert.Equal(t, head(4), head(5))
	assert.NotEqual(t, head(0), head(2))
	assert.NotEqual(t, got[0].Prompt, got[1].Prompt)

	spec.DisableShuffle = false
	shuffled, err := Load(context.Background(), spec, tok)
	require.NoError(t, err)
	var a, b []string
	for i := range got {
		a, b = append(a, got[i].Prompt), append(b, shuffled[i].Prompt)
	}
	assert.NotEqual(t, a, b)
	assert.ElementsMatch(t, a, b, "the same prompts, shuffled")

	spec.NumPrompts = 2
	_, err = Load(context.Background(), spec, tok)
	assert.EqualError(t, err, "load prefix_repetition dataset: num prompts (2) must be greater than or equal to num prefixes (3)")
}

func TestSpecBench(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	got, err := Load(context.Background(), Spec{Name: SpecBench, Path: fixture("spec_bench.jsonl"), NumPrompts: -1, DisableShuffle: true, SkipChatTemplate: true, SpecBench: SpecBenchParams{Category: "math"}}, tok)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "What is 17 multiplied by 23? Show the steps.", got[0].Prompt)
	assert.Equal(t, "Is 221 a prime number? Explain briefly.", got[1].Prompt)
	assert.Equal(t, 256, got[0].OutputLen)

	got, err = Load(context.Background(), Spec{Name: SpecBench, Path: fixture("spec_bench.jsonl"), NumPrompts: 8, TokenizerConfig: llama3Config(t), SpecBench: SpecBenchParams{OutputLen: 32}}, tok)
	require.NoError(t, err)
	require.Len(t, got, 8, "oversampled")
	for _, s := range got {
		assert.True(t, strings.HasPrefix(s.Prompt, "<|begin_of_text|><|start_header_id|>user"), s.Prompt)
		assert.Equal(t, 32, s.OutputLen)
	}

	_, err = Load(context.Background(), Spec{Name: SpecBench, Path: fixture("spec_bench_bad_turns.jsonl"), SkipChatTemplate: true}, tok)
	assert.EqualError(t, err, "load spec_bench dataset: "+fixture("spec_bench_bad_turns.jsonl")+`:2: field "turns": want a non-empty list of strings, got "not a list"`)
	_, err = Load(context.Background(), Spec{Name: SpecBench, Path: fixture("spec_bench.jsonl"), SkipChatTemplate: true, SpecBench: SpecBenchParams{Category: "poetry"}}, tok)
	assert.EqualError(t, err, "load spec_bench dataset: "+fixture("spec_bench.jsonl")+`: no rows of category "poetry"`)
}

func TestSonnet(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	cfg := llama3Config(t)
	spec := Spec{Name: Sonnet, Path: fixture("sonnet.txt"), NumPrompts: 6, TokenizerConfig: cfg, Sonnet: SonnetParams{InputLen: 200, PrefixLen: 80, OutputLen: 20}}
	got, err := Load(context.Background(), spec, tok)
	require.NoError(t, err)
	require.Len(t, got, 6)
	// The formatted instruction is 23 tokens and the poem's lines average
	// 10.64 tokens (BOS included, checked with Python's tokenizers), so there
	// are round((80-23)/10.64) = 5 prefix lines and round((200-23)/10.64) = 17
	// lines in all.
	prefix := sonnetBase + "The lamp burns low upon the harbour wall,\nAnd gulls return to sleep along the quay;\nThe tide goes out as if it heard a call\nFrom somewhere far beyond the darkened sea.\nI count the boats that rock against the stone,\n"
	for i, s := range got {
		assert.True(t, strings.HasPrefix(s.Prompt, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"+prefix), s.Prompt)
		assert.LessOrEqual(t, s.PromptLen, 200)
		assert.Equal(t, len(tok.Encode(s.Prompt, true)), s.PromptLen)
		assert.Equal(t, 20, s.OutputLen)
		// Two newlines after the user header, one after the instruction, 17
		// poem lines of which the template trims the last newline, two after
		// the assistant header.
		assert.Equal(t, 2+1+16+2, strings.Count(s.Prompt, "\n"), "sample %d", i)
	}

	spec.Backend = "openai-chat"
	chat, err := Load(context.Background(), spec, tok)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(chat[0].Prompt, prefix), "openai-chat gets the raw prompt")
	assert.Equal(t, got[0].PromptLen, chat[0].PromptLen, "counted formatted either way")

	spec.Sonnet.InputLen = 23
	_, err = Load(context.Background(), spec, tok)
	assert.EqualError(t, err, "load sonnet dataset: input length 23 must be higher than the base prompt length (23)")

	spec.Sonnet.InputLen = 60
	_, err = Load(context.Background(), spec, tok)
	assert.EqualError(t, err, "load sonnet dataset: "+fixture("sonnet.txt")+": 1000 draws in a row gave prompts longer than the input length 60; raise it")

	spec.Sonnet.InputLen, spec.TokenizerConfig = 200, &TokenizerConfig{}
	_, err = Load(context.Background(), spec, tok)
	assert.ErrorContains(t, err, "the tokenizer has no chat template, which sonnet needs")
}

func TestTxtSlicesErrors(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	empty := writeTemp(t, "empty.txt", "")
	_, err := Load(context.Background(), Spec{Name: TxtSlices, Path: empty}, tok)
	assert.EqualError(t, err, "load txt-slices dataset: "+empty+": the text file is empty")
	_, err = Load(context.Background(), Spec{Name: TxtSlices}, tok)
	assert.EqualError(t, err, "load txt-slices dataset: no dataset path")
}

func TestSpecValidation(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{NumPrompts: -1}, "load random dataset: num prompts -1 must be positive (only custom and spec_bench take a negative count for every row)"},
		{Spec{Name: ShareGPT, TraceReplay: true}, `load sharegpt dataset: trace replay needs arrival times, which only burstgpt (Timestamp) and custom ("timestamp") carry`},
		{Spec{Random: RandomParams{BatchSize: -1}}, "load random dataset: batch size -1 must be at least 1"},
	}
	for _, tt := range tests {
		_, err := Load(context.Background(), tt.spec, tok)
		assert.EqualError(t, err, tt.want)
	}
}

func TestUnknownDataset(t *testing.T) {
	_, err := Load(context.Background(), Spec{Name: "hf"}, loadTokenizer(t, fixtures.Llama3))
	assert.EqualError(t, err, `load dataset: unknown dataset "hf" (known: [random random-rerank sharegpt custom spec_bench sonnet burstgpt prefix_repetition txt-slices])`)
	_, err = Load(context.Background(), Spec{}, nil)
	assert.EqualError(t, err, "load random dataset: no tokenizer")
}

func TestFileErrorIsTyped(t *testing.T) {
	_, err := Load(context.Background(), Spec{Name: Custom, Path: fixture("custom_bad_malformed.jsonl"), SkipChatTemplate: true}, loadTokenizer(t, fixtures.Llama3))
	var fe *FileError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, fixture("custom_bad_malformed.jsonl"), fe.Path)
	assert.Equal(t, 2, fe.Line)
}
