package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
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
	growth := peakGrowth(t, func() {
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
		g := peakGrowth(b, func() {
			if _, err := Load(context.Background(), Source{Kind: KindFile, Path: path}, "", tok, 1); err != nil {
				b.Fatal(err)
			}
		})
		worst = max(worst, g)
	}
	b.ReportMetric(float64(worst)/float64(size), "peak-B/input-B")
}

// peakGrowth returns how much f raised the process's peak resident set
// size above its resident size before f.
func peakGrowth(tb testing.TB, f func()) int64 {
	tb.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak resident set size: %v", err)
	}
	before := procStatus(tb, "VmRSS:")
	f()
	return procStatus(tb, "VmHWM:") - before
}

// procStatus reads a kB field of /proc/self/status, in bytes.
func procStatus(tb testing.TB, field string) int64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}
