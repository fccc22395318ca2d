package dataset

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// The GPT-4 rows of fixtures/datasets/burstgpt.csv with a positive
// response length, in file order: request and response tokens.
var burstInputs, burstOutputs = []int{1087, 24, 333, 12, 2950, 86}, []int{136, 93, 201, 47, 1, 560}

func lens(samples []Sample) (in, out []int) {
	for _, s := range samples {
		in, out = append(in, s.PromptLen), append(out, s.OutputLen)
	}
	return in, out
}

func TestBurstGPT(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	load := func(s Spec) []Sample {
		t.Helper()
		s.Name, s.Path = BurstGPT, fixture("burstgpt.csv")
		got, err := Load(context.Background(), s, tok)
		require.NoError(t, err)
		return got
	}
	t.Run("file order cycles", func(t *testing.T) {
		got := load(Spec{NumPrompts: 8, DisableShuffle: true})
		in, out := lens(got)
		assert.Equal(t, append(burstInputs, 1087, 24), in)
		assert.Equal(t, append(burstOutputs, 136, 93), out)
		// Sample i's prompt is the ids (i+j) mod vocab_size decoded.
		ids := make([]int, 24)
		for j := range ids {
			ids[j] = 7 + j
		}
		assert.Equal(t, tok.Decode(ids, false), got[7].Prompt)
		assert.Equal(t, "7", got[7].RequestID)
		assert.False(t, got[0].HasArrival)
	})
	t.Run("sample without replacement", func(t *testing.T) {
		got := load(Spec{NumPrompts: 6, Seed: 3})
		in, _ := lens(got)
		assert.NotEqual(t, burstInputs, in, "shuffled")
		sort.Ints(in)
		want := append([]int(nil), burstInputs...)
		sort.Ints(want)
		assert.Equal(t, want, in, "each row once")
	})
	t.Run("sample with replacement", func(t *testing.T) {
		got := load(Spec{NumPrompts: 20, Seed: 3})
		require.Len(t, got, 20)
		seen := map[int]int{}
		for _, s := range got {
			seen[s.PromptLen]++
			assert.Contains(t, burstInputs, s.PromptLen)
		}
		assert.Equal(t, load(Spec{NumPrompts: 20, Seed: 3}), got)
	})
	t.Run("trace replay", func(t *testing.T) {
		want := []time.Duration{0, 96 * time.Second, 113500 * time.Millisecond, 126 * time.Second}
		for _, speed := range []float64{1, 4} { // trace time whatever TraceSpeed says
			got := load(Spec{NumPrompts: 4, TraceReplay: true, TraceSpeed: speed})
			var arr []time.Duration
			for _, s := range got {
				assert.True(t, s.HasArrival)
				arr = append(arr, s.Arrival)
			}
			assert.Equal(t, want, arr, "speed %v", speed)
			in, _ := lens(got)
			assert.Equal(t, burstInputs[:4], in)
		}
		assert.Len(t, load(Spec{NumPrompts: 100, TraceReplay: true}), 6, "a trace is not oversampled")
	})
}

func TestBurstGPTErrors(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	tests := []struct{ file, want string }{
		{"burstgpt_bad_tokens.csv", `:3: column "Request tokens": want a whole number of tokens, got "lots"`},
		{"burstgpt_bad_header.csv", `:1: missing column "Timestamp"`},
		{"burstgpt_no_gpt4.csv", `: no GPT-4 row with positive Response tokens`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(context.Background(), Spec{Name: BurstGPT, Path: fixture(tt.file)}, tok)
			require.Error(t, err)
			assert.Equal(t, "load burstgpt dataset: "+fixture(tt.file)+tt.want, err.Error())
		})
	}
}
