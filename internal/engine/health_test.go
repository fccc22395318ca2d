package engine

import (
	"math"
	rtmetrics "runtime/metrics"
	"testing"
	"time"
)

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	before := &rtmetrics.Float64Histogram{Counts: []uint64{5, 0, 0, 0}, Buckets: []float64{0, 0.001, 0.01, 0.1, inf}}
	after := &rtmetrics.Float64Histogram{Counts: []uint64{5 + 90, 9, 1, 0}, Buckets: before.Buckets}
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0.5, time.Millisecond},       // in the first bucket: its upper edge
		{0.99, 10 * time.Millisecond}, // the 99th of 100 is in the second
		{1, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := histogramQuantile(before, after, tt.q); got != tt.want {
			t.Errorf("q %v: %v, want %v", tt.q, got, tt.want)
		}
	}
	last := &rtmetrics.Float64Histogram{Counts: []uint64{5, 0, 0, 7}, Buckets: before.Buckets}
	if got := histogramQuantile(before, last, 0.99); got != 100*time.Millisecond {
		t.Errorf("unbounded bucket: %v, want its lower edge 100ms", got)
	}
	if got := histogramQuantile(before, before, 0.99); got != 0 {
		t.Errorf("nothing added: %v, want 0", got)
	}
}
