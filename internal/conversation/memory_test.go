package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/memtest"
)

// hugeMessageFile writes a conversations file of one user message of
// about n bytes of prose and returns its path and size.
func hugeMessageFile(tb testing.TB, n int) (string, int) {
	tb.Helper()
	text, err := os.ReadFile("testdata/pg1184.txt")
	if err != nil {
		tb.Fatal(err)
	}
	body := strings.Repeat(string(text), n/len(text)+1)[:n]
	data, err := json.Marshal([]map[string]any{{"id": "a", "messages": []map[string]string{{"role": "user", "content": body}}}})
	if err != nil {
		tb.Fatal(err)
	}
	return writeFile(tb, "huge.json", string(data)), len(data)
}

// TestHugeMessageMemory: a conversations file of one 4 MB user message
// raises peak resident memory by less than 16 bytes per byte of file.
// Its message was encoded whole before, at about 115 bytes per byte
// (a 20 MB message peaked at 2.3 GB). Linux only.
func TestHugeMessageMemory(t *testing.T) {
	tok := loadLlama3(t)
	path, size := hugeMessageFile(t, 4<<20)
	var convs []Conversation
	growth := memtest.PeakGrowth(t, func() {
		var err error
		convs, err = Load(context.Background(), Source{Kind: KindFile, Path: path}, "", tok, 1)
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("peak RSS grew by %d MB for a %d MB file", growth>>20, size>>20)
	if limit := int64(16 * size); growth > limit {
		t.Errorf("peak RSS grew by %d bytes (%.0f per byte of file), want under %d", growth, float64(growth)/float64(size), limit)
	}
	checkCounts(t, convs)
}

// BenchmarkLoadConversations loads a conversations file of one user
// message of 4 MB and reports the growth of peak resident memory per
// byte of file (Linux only).
func BenchmarkLoadConversations(b *testing.B) {
	tok := loadLlama3(b)
	path, size := hugeMessageFile(b, 4<<20)
	var worst int64
	for b.Loop() {
		g := memtest.PeakGrowth(b, func() {
			if _, err := Load(context.Background(), Source{Kind: KindFile, Path: path}, "", tok, 1); err != nil {
				b.Fatal(err)
			}
		})
		worst = max(worst, g)
	}
	b.ReportMetric(float64(worst)/float64(size), "peak-B/input-B")
}

// blockTrace writes a Mooncake trace of lines requests of input tokens
// each, in blocks of block tokens: each line shares its first half of
// hash ids with the others. It returns the path and the tokens in all.
func blockTrace(tb testing.TB, lines, input, block int) (string, int) {
	tb.Helper()
	var b strings.Builder
	blocks := (input + block - 1) / block
	for l := range lines {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 8, "hash_ids": [`, l, input)
		for k := range blocks {
			id := k
			if k >= blocks/2 {
				id = (l+1)*blocks + k
			}
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(id))
		}
		b.WriteString("]}\n")
	}
	return writeFile(tb, "trace.jsonl", b.String()), lines * input
}

// BenchmarkLoadMooncake loads a trace of 100 requests of 40000 tokens at
// block sizes of 1 and 512 tokens. It reports the growth of peak resident
// memory and the heap the conversations hold after the load, each per
// input token (Linux only).
func BenchmarkLoadMooncake(b *testing.B) {
	tok := loadLlama3(b)
	blockVocabOf(tok)
	for _, block := range []int{1, 512} {
		b.Run(fmt.Sprintf("block=%d", block), func(b *testing.B) {
			path, tokens := blockTrace(b, 100, 40000, block)
			var peak, held int64
			for b.Loop() {
				var convs []Conversation
				var ms runtime.MemStats
				debug.FreeOSMemory() // the trace's writing and earlier loads
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				g := memtest.PeakGrowth(b, func() {
					var err error
					convs, err = Load(context.Background(), Source{Kind: KindMooncake, Path: path, BlockSize: block}, "", tok, 1)
					if err != nil {
						b.Fatal(err)
					}
				})
				runtime.GC()
				runtime.ReadMemStats(&ms)
				peak, held = max(peak, g), max(held, int64(ms.HeapAlloc)-int64(before))
				runtime.KeepAlive(convs)
			}
			b.ReportMetric(float64(peak)/float64(tokens), "peak-B/token")
			b.ReportMetric(float64(held)/float64(tokens), "held-B/token")
		})
	}
}
