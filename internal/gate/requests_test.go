package gate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// resultJSON writes a detailed result file of TTFTs at 0.1 s intervals.
func resultJSON(t *testing.T, ttfts []float64, errs []string, sched []float64) []byte {
	t.Helper()
	m := map[string]any{"ttfts": ttfts, "errors": errs, "scheduled_times": sched, "start_times": sched, "duration": 1.0}
	data, err := json.Marshal(m)
	require.NoError(t, err)
	return data
}

func TestRequestPairsFromResults(t *testing.T) {
	sched := []float64{0, 0.1, 0.2, 0.3}
	base := resultJSON(t, []float64{0.05, 0.06, 0.07, 0.08}, []string{"", "", "", ""}, sched)
	head := resultJSON(t, []float64{0.055, 0, 0.077, 0.088}, []string{"", "reset by peer", "", ""}, sched)
	pairs, dropped, err := RequestPairsFromResults("chat pair 1", base, head)
	require.NoError(t, err)
	require.Equal(t, 1, dropped)
	require.Equal(t, []RequestPair{{0, 0.05, 0.055}, {0.2, 0.07, 0.077}, {0.3, 0.08, 0.088}}, pairs)

	tests := []struct {
		name       string
		base, head []byte
		want       string
	}{
		{"other count", base, resultJSON(t, []float64{1, 1, 1}, []string{"", "", ""}, []float64{0, 0.1, 0.2}), "base has 4 requests, head 3"},
		{"other schedule", base, resultJSON(t, []float64{1, 1, 1, 1}, []string{"", "", "", ""}, []float64{0, 0.1, 0.25, 0.3}), "request 2 is scheduled at 0.200000 s in base, 0.250000 s in head"},
		{"not json", []byte("{"), head, "chat pair 1: base: read result"},
		{"no ttfts", base, []byte(`{"errors": []}`), "head: read result: no ttfts"},
		{"short errors", base, []byte(`{"ttfts": [1], "errors": [], "start_times": [0]}`), "errors: 0 entries for 1 requests"},
		{"nan ttft of a success", base, []byte(`{"ttfts": [NaN, 1, 1, 1], "errors": ["", "", "", ""], "start_times": [0, 0.1, 0.2, 0.3], "note": "NaN"}`), ""},
		{"negative start", base, []byte(`{"ttfts": [1], "errors": [""], "start_times": [-1]}`), "request 0: start offset -1"},
		// Fail closed: a run cut short or whose load generator fell
		// behind is refused, as the benchfmt readers refuse its lines.
		{"interrupted", base, []byte(`{"ttfts": [1], "errors": [""], "start_times": [0], "interrupted": true, "interrupted_by": "signal"}`), "head: read result: an interrupted run (signal): it speaks for part of its schedule only; rerun the whole pair"},
		{"invalid", []byte(`{"ttfts": [1], "errors": [""], "start_times": [0], "invalid": "load generator fell behind"}`), head, "base: read result: an invalid run (load generator fell behind)"},
		{"short latencies", base, []byte(`{"ttfts": [1], "errors": [""], "start_times": [0], "latencies": [], "output_lens": [3]}`), "latencies: 0 entries for 1 requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pairs, _, err := RequestPairsFromResults("chat pair 1", tt.base, tt.head)
			if tt.want == "" {
				// Python's bare NaN reads as 0, which the bootstrap
				// refuses for a request that did not fail.
				require.NoError(t, err)
				require.Equal(t, 0.0, pairs[0].Head)
				_, err = BootstrapPair(pairs, 0.99, 10, 0, nil)
				require.ErrorContains(t, err, "request pairs, want at least")
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}
