package dataset

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/cputime"
	"github.com/servegate/servegate/internal/tokenizer"
)

// BenchmarkRandom10k generates 10,000 random prompts of 1,024 tokens on the
// Llama-3 tokenizer per iteration (run it with -benchtime=1x). It reports
// prompts/s and the share of prompts that re-encode to exactly the target.
func BenchmarkRandom10k(b *testing.B) { benchmarkRandom(b, 10000) }

// BenchmarkRandom500 is BenchmarkRandom10k with 500 prompts, short enough
// to run several times when comparing changes.
func BenchmarkRandom500(b *testing.B) { benchmarkRandom(b, 500) }

func benchmarkRandom(b *testing.B, n int) {
	tok := loadTokenizer(b, fixtures.Llama3)
	spec := Spec{NumPrompts: n, Random: RandomParams{InputLen: 1024}}
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

// BenchmarkRandomStartup is the dataset generation of a `servegate bench`
// start-up, as the peer comparison runs it. It builds 1,000 random prompts
// of 64 tokens, seed 1, on the Llama-3 tokenizer. Each iteration loads the
// tokenizer afresh, outside the measurement, as a new process would. So
// nothing is cached from an earlier iteration: no NUL tokens, no word cache.
// It reports the CPU time of one generation, all goroutines counted.
func BenchmarkRandomStartup(b *testing.B) {
	path := fixtures.Tokenizer(b, fixtures.Llama3)
	spec := Spec{NumPrompts: 1000, Seed: 1, Random: RandomParams{InputLen: 64, OutputLen: 1}}
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		tok, err := tokenizer.FromFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := cputime.Process()
		if _, err := Load(context.Background(), spec, tok); err != nil {
			b.Fatal(err)
		}
		cpu += cputime.Process() - cpu0
		b.StopTimer()
		tok.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkShareGPT loads 1,000 samples from a generated ShareGPT file of
// 20,000 conversations (about 12 MB) on the Llama-3 tokenizer: parse,
// shuffle, tokenize and filter.
func BenchmarkShareGPT(b *testing.B) {
	tok := loadTokenizer(b, fixtures.Llama3)
	var sb strings.Builder
	sb.WriteString("[\n")
	for i := range 20000 {
		if i > 0 {
			sb.WriteString(",\n")
		}
		fmt.Fprintf(&sb, `{"id": "c%d", "conversations": [{"from": "human", "value": %q}, {"from": "gpt", "value": %q}]}`,
			i, strings.Repeat(fmt.Sprintf("Question %d about rivers and mountains? ", i), 1+i%12),
			strings.Repeat(fmt.Sprintf("Answer %d: the river flows to the sea past the hills. ", i), 2+i%20))
	}
	sb.WriteString("\n]\n")
	path := writeTemp(b, "sharegpt.json", sb.String())
	spec := Spec{Name: ShareGPT, Path: path, NumPrompts: 1000}
	b.ResetTimer()
	for b.Loop() {
		got, err := Load(context.Background(), spec, tok)
		if err != nil || len(got) != 1000 {
			b.Fatal(err, len(got))
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "samples/s")
}
