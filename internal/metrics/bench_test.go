package metrics

import (
	"testing"
	"time"

	"github.com/servegate/servegate/internal/cputime"
)

// BenchmarkSummarize1MITL summarises one record set holding one million
// ITL samples (1,000 requests of 1,000 chunks).
func BenchmarkSummarize1MITL(b *testing.B) {
	const reqs, chunks = 1000, 1000
	recs := make([]Record, reqs)
	for i := range recs {
		itl := make([]time.Duration, chunks-1)
		for j := range itl {
			itl[j] = time.Duration(10_000_000 + (i*7919+j*104729)%5_000_000)
		}
		var lat time.Duration = 50 * time.Millisecond
		for _, g := range itl {
			lat += g
		}
		recs[i] = Record{
			Start: time.Duration(i) * 10 * time.Millisecond, TTFT: 50 * time.Millisecond,
			ITL: itl, Latency: lat, OutputTokens: chunks, PromptLen: 100, Success: true,
		}
	}
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for b.Loop() {
		s := Summarize(recs, 30*time.Second, Options{Percentiles: []float64{50, 90, 99, 99.9}})
		if s.ITL.Count != reqs*(chunks-1) {
			b.Fatalf("ITL count %d", s.ITL.Count)
		}
	}
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
}
