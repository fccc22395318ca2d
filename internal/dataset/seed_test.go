package dataset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// TestSeedEverywhere checks every dataset: the same seed gives the same
// samples, another seed different ones (vLLM ignores the seed for custom and
// spec_bench; servegate does not).
func TestSeedEverywhere(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	cfg := llama3Config(t)
	specs := []Spec{
		{Name: Random, NumPrompts: 4, Random: RandomParams{InputLen: 24, RangeRatio: 0.3}},
		{Name: RandomRerank, NumPrompts: 3, Random: RandomParams{InputLen: 40}},
		{Name: ShareGPT, NumPrompts: 5, Path: fixture("sharegpt.json")},
		{Name: Custom, NumPrompts: 5, Path: fixture("custom.jsonl")},
		{Name: SpecBench, NumPrompts: 5, Path: fixture("spec_bench.jsonl")},
		{Name: Sonnet, NumPrompts: 3, Path: fixture("sonnet.txt"), Sonnet: SonnetParams{InputLen: 120, PrefixLen: 40}},
		{Name: BurstGPT, NumPrompts: 6, Path: fixture("burstgpt.csv")},
		{Name: TxtSlices, NumPrompts: 3, Path: fixture("sonnet.txt"), TxtSlices: TxtSlicesParams{InputLen: 20}},
		{Name: PrefixRepetition, NumPrompts: 4, PrefixRepetition: PrefixRepetitionParams{PrefixLen: 8, SuffixLen: 8, NumPrefixes: 2}},
	}
	for _, s := range specs {
		t.Run(s.Name, func(t *testing.T) {
			s.TokenizerConfig = cfg
			load := func(seed int64) []Sample {
				s.Seed = seed
				got, err := Load(context.Background(), s, tok)
				require.NoError(t, err)
				return got
			}
			assert.Equal(t, load(1), load(1))
			assert.NotEqual(t, load(1), load(2))
		})
	}
}
