package twin

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/servegate/servegate/internal/metrics"
)

// overlapping are n requests in flight at once for a second.
func overlapping(n int) []metrics.Record {
	recs := make([]metrics.Record, n)
	for i := range recs {
		recs[i] = metrics.Record{Start: time.Duration(i) * time.Millisecond, Latency: time.Second, TTFT: 20 * time.Second, PromptLen: 160, Success: true}
	}
	return recs
}

func TestInferMaxNumSeqs(t *testing.T) {
	for _, tc := range []struct {
		name             string
		running, waiting []float64
		inFlight         int
		want             int
		pinned           bool
	}{
		{"a plateau with requests waiting", []float64{2, 8, 8, 8, 3}, []float64{0, 3, 5, 1, 0}, 12, 8, true},
		{"one transient wait", []float64{2, 5, 8, 3}, []float64{0, 1, 0, 0}, 9, 8, false},
		{"never waited", []float64{2, 3}, []float64{0, 0}, 6, 6, false},
		{"no server metrics", nil, nil, 5, 5, false},
		{"a missed scrape", []float64{math.NaN(), 4, 4}, []float64{math.NaN(), 2, 2}, 7, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{Path: "r.json", Records: overlapping(tc.inFlight)}
			if tc.running != nil {
				r.Series = map[string][]float64{"vllm:num_requests_running": tc.running, "vllm:num_requests_waiting": tc.waiting}
			}
			got, pinned, note := inferMaxNumSeqs([]*Run{r})
			assert.Equal(t, tc.want, got, note)
			assert.Equal(t, tc.pinned, pinned, note)
			assert.NotEmpty(t, note)
		})
	}
}

func TestInferKVBlocks(t *testing.T) {
	r := &Run{Path: "r.json", Records: overlapping(1), Series: map[string][]float64{
		"t": {0.1, 0.2, 0.3, 0.4}, "vllm:kv_cache_usage_perc": {0.1, 0.1, 0.1, 0.01},
	}}
	n, pinned, note := inferKVBlocks([]*Run{r}, 16, 256)
	assert.True(t, pinned, note)
	assert.Equal(t, 100, n, "10 blocks held at 10%% use: %s", note)

	r.Series["vllm:kv_cache_usage_perc"] = []float64{0.01, 0.01, 0.01, 0.01}
	n, pinned, note = inferKVBlocks([]*Run{r}, 16, 256)
	assert.False(t, pinned, note)
	assert.Positive(t, n)
}

func TestFlagValue(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  int
		found bool
		err   bool
	}{
		{[]string{"--max-num-seqs", "8"}, 8, true, false},
		{[]string{"--enable-prefix-caching", "--max-num-seqs=16"}, 16, true, false},
		{[]string{"--max-num-seqs-x", "8"}, 0, false, false},
		{[]string{"--max-num-seqs", "many"}, 0, true, true},
		{nil, 0, false, false},
	} {
		got, found, err := flagValue(tc.args, "--max-num-seqs")
		assert.Equal(t, tc.want, got, "%v", tc.args)
		assert.Equal(t, tc.found, found, "%v", tc.args)
		assert.Equal(t, tc.err, err != nil, "%v", tc.args)
	}
}
