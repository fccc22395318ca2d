package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/memtest"
)

// resultFile writes a result JSON of about n bytes, most of it one list
// of numbers as vLLM's per-request "ttfts", and returns its path.
func resultFile(tb testing.TB, n int) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "result.json")
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprint(w, `{"model_id": "m", "ttfts": [`)
	for i, size := 0, 0; size < n; i++ {
		k, _ := fmt.Fprintf(w, "0.%09d, ", 123456789+i)
		size += k
	}
	fmt.Fprint(w, "0.1]}\n")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestAddMemory: adding a 48 MiB result JSON raises peak resident memory
// by less than 16 MiB. An add held every file whole before: a 200 MB JSON
// peaked at 648 MB. The streamed add grows by a few MiB (decoder buffers
// and garbage of one token at a time), far from both. Linux only.
func TestAddMemory(t *testing.T) {
	const size = 48 << 20
	res := resultFile(t, size)
	bf := benchfmtFile(t, "aaa", 0.030, "")
	s, err := Create(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	var r *Run
	growth := memtest.PeakGrowth(t, func() {
		r = addCommit(t, s, "cpu4", 1, bf, res)
	})
	t.Logf("peak RSS grew by %.1f MiB for a %d MiB result file", float64(growth)/(1<<20), size>>20)
	if limit := int64(16 << 20); growth > limit {
		t.Errorf("peak RSS grew by %d bytes, want under %d", growth, limit)
	}
	if got := r.Manifest.Files[1]; got.Kind != KindResult || got.Bytes < size {
		t.Errorf("filed %+v", got)
	}
	if _, err := readRun(r.Dir, "cpu4", "c001", true); err != nil {
		t.Error(err)
	}
}

// BenchmarkAdd adds a 200 MB result JSON, the size that peaked at 648 MB
// when an add held its files, and reports the growth of peak resident
// memory per byte of file and the speed (Linux only).
func BenchmarkAdd(b *testing.B) {
	const size = 200 << 20
	res := resultFile(b, size)
	bf := benchfmtFile(b, "aaa", 0.030, "")
	s, err := Create(filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	var worst int64
	i := 0
	for b.Loop() {
		i++
		g := memtest.PeakGrowth(b, func() {
			if _, err := s.Add(context.Background(), AddRequest{Commit: fmt.Sprintf("c%03d", i), CommitTime: t0.Add(time.Duration(i) * time.Hour),
				Runner: "cpu4", Version: "test", Files: []string{bf, res}}); err != nil {
				b.Fatal(err)
			}
		})
		worst = max(worst, g)
	}
	b.ReportMetric(float64(worst)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(worst)/size, "peak-B/input-B")
}
