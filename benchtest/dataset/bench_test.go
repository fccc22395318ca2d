package dataset

import (
	"context"
	"testing"

	"github.com/servegate/servegate/fixtures"
)

// BenchmarkRandom10k generates 10,000 random prompts of 1,024 tokens on the
// Llama-3 tokenizer per iteration (run it with -benchtime=1x). It reports
// prompts/s and the share of prompts that re-encode to exactly the target.
func BenchmarkRandom10k(b *testing.B) {
	tok := loadTokenizer(b, fixtures.Llama3)
	spec := Spec{NumPrompts: 10000, Random: RandomParams{InputLen: 1024}}
	b.ResetTimer()
	var exact, total int
	for b.Loop() {
		got, err := Load(context.Background(), spec, tok)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range got {
			if s.PromptLen == 1023 {
				exact++
			}
		}
		total += len(got)
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "prompts/s")
	b.ReportMetric(float64(exact)/float64(total), "exact-ratio")
}
