package tokenizer

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

type goldenIDs struct {
	Plain   []int  `json:"plain"`
	Special []int  `json:"special"`
	Decoded string `json:"decoded"`
}

type golden struct {
	Cases []struct {
		Text   string    `json:"text"`
		Llama3 goldenIDs `json:"llama3"`
		BERT   goldenIDs `json:"bert"`
	} `json:"cases"`
	Llama3Vocab     int `json:"llama3_vocab_size"`
	Llama3BaseVocab int `json:"llama3_base_vocab_size"`
	BERTVocab       int `json:"bert_vocab_size"`
	BERTBaseVocab   int `json:"bert_base_vocab_size"`
}

func loadGolden(tb testing.TB) golden {
	tb.Helper()
	data, err := os.ReadFile("testdata/golden.json")
	require.NoError(tb, err)
	var g golden
	require.NoError(tb, json.Unmarshal(data, &g))
	require.GreaterOrEqual(tb, len(g.Cases), 20)
	return g
}

func load(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	tk, err := FromFile(fixtures.Tokenizer(tb, name))
	require.NoError(tb, err)
	tb.Cleanup(func() { tk.Close() })
	return tk
}

// TestGoldenIDs compares token ids with those of Hugging Face's Python
// tokenizers package (testdata/gen_golden.py wrote them).
func TestGoldenIDs(t *testing.T) {
	g := loadGolden(t)
	for _, tc := range []struct {
		file string
		pick func(i int) goldenIDs
	}{
		{fixtures.Llama3, func(i int) goldenIDs { return g.Cases[i].Llama3 }},
		{fixtures.BERT, func(i int) goldenIDs { return g.Cases[i].BERT }},
	} {
		tk := load(t, tc.file)
		for i, c := range g.Cases {
			want := tc.pick(i)
			name := tc.file + "/" + c.Text
			if len(name) > 60 {
				name = name[:60]
			}
			t.Run(name, func(t *testing.T) {
				require.Equal(t, nonNil(want.Plain), nonNil(tk.Encode(c.Text, false)), "without special tokens")
				require.Equal(t, nonNil(want.Special), nonNil(tk.Encode(c.Text, true)), "with special tokens")
				require.Equal(t, len(want.Plain), tk.Count(c.Text))
				require.Equal(t, want.Decoded, tk.Decode(want.Plain, false))
			})
		}
	}
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

func TestVocabularyAndSpecials(t *testing.T) {
	g := loadGolden(t)
	llama := load(t, fixtures.Llama3)
	require.Equal(t, g.Llama3Vocab, llama.VocabSize())
	require.Equal(t, g.Llama3BaseVocab, llama.BaseVocabSize())
	require.Equal(t, 1, llama.NumSpecialTokensToAdd(), "Llama-3 adds <|begin_of_text|>")
	specials := llama.SpecialIDs()
	require.Len(t, specials, 256)
	require.Equal(t, 128000, specials[0])
	require.Equal(t, 128255, specials[255])

	bert := load(t, fixtures.BERT)
	require.Equal(t, g.BERTVocab, bert.VocabSize())
	require.Equal(t, g.BERTBaseVocab, bert.BaseVocabSize())
	require.Equal(t, 2, bert.NumSpecialTokensToAdd(), "BERT adds [CLS] and [SEP]")
	require.Equal(t, []int{0, 100, 101, 102, 103}, bert.SpecialIDs())
}

func TestDecodeSkipSpecial(t *testing.T) {
	tk := load(t, fixtures.Llama3)
	ids := tk.Encode("Hello world", true)
	require.Equal(t, "<|begin_of_text|>Hello world", tk.Decode(ids, false))
	require.Equal(t, "Hello world", tk.Decode(ids, true))
}

// TestConcurrentUse encodes from many goroutines at once; run with -race to
// check the locking.
func TestConcurrentUse(t *testing.T) {
	tk := load(t, fixtures.Llama3)
	text := strings.Repeat("concurrency is not parallelism. ", 50)
	want := tk.Encode(text, false)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 16 {
		wg.Go(func() {
			for range 20 {
				if got := tk.Encode(text, false); len(got) != len(want) || got[0] != want[0] {
					errs <- "concurrent encode differs"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestClosedTokenizerIsEmpty(t *testing.T) {
	tk, err := FromFile(fixtures.Tokenizer(t, fixtures.BERT))
	require.NoError(t, err)
	require.NoError(t, tk.Close())
	require.NoError(t, tk.Close())
	require.Nil(t, tk.Encode("hello", false))
	require.Equal(t, 0, tk.Count("hello"))
	require.Equal(t, "", tk.Decode([]int{7592}, false))
}

func TestBadFiles(t *testing.T) {
	_, err := FromFile("testdata/does-not-exist.json")
	require.ErrorContains(t, err, "load tokenizer: open testdata/does-not-exist.json")
	_, err = FromBytes([]byte("{not json"))
	require.ErrorContains(t, err, "parse tokenizer.json")
	_, err = FromBytes([]byte(`{"model": {"type": "nonsense"}}`))
	require.ErrorContains(t, err, "load tokenizer")
}

// BenchmarkEncode encodes a prompt of 1,000 Llama-3 tokens.
func BenchmarkEncode(b *testing.B) {
	tk := load(b, fixtures.Llama3)
	ids := make([]int, 1000)
	for i := range ids {
		ids[i] = 1000 + (i*7919)%100000
	}
	text := tk.Decode(ids, false)
	n := tk.Count(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		tk.Encode(text, false)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(float64(n), "tokens/op")
}

// BenchmarkLoad loads the Llama-3 tokenizer from its bytes, the tokenizer
// part of a `servegate bench` start-up, and reports its CPU time (user plus
// system, all threads).
func BenchmarkLoad(b *testing.B) {
	data, err := os.ReadFile(fixtures.Tokenizer(b, fixtures.Llama3))
	require.NoError(b, err)
	var cpu time.Duration
	for b.Loop() {
		cpu0 := processCPU()
		tk, err := FromBytes(data)
		cpu += processCPU() - cpu0
		require.NoError(b, err)
		b.StopTimer()
		tk.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
}

// processCPU is the CPU time this process has used (user plus system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
