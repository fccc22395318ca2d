package conversation

import (
	"context"
	"testing"
)

// BenchmarkLoad measures Load per source on the test data, reporting
// user tokens built per second (the tokenizer is loaded before the timer,
// and a trace's block vocabulary is built once per tokenizer).
func BenchmarkLoad(b *testing.B) {
	tok := loadLlama3(b)
	blockVocabOf(tok)
	for _, bc := range []struct {
		name string
		src  Source
	}{
		{"synthetic_vllm_config", Source{Kind: KindSynthetic, Path: "generate_multi_turn.json"}},
		{"sharegpt", Source{Kind: KindShareGPT, Path: "sharegpt_parts.json", KeepASCII: true}},
		{"mooncake_fast25_slice", Source{Kind: KindMooncake, Path: "mooncake_fast25_slice.jsonl"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tokens := 0
			for b.Loop() {
				convs, err := Load(context.Background(), bc.src, "testdata", tok, 1)
				if err != nil {
					b.Fatal(err)
				}
				tokens = 0
				for _, c := range convs {
					for _, t := range c.Turns {
						tokens += t.UserTokens
					}
				}
			}
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
