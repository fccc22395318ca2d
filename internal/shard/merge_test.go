package shard

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
)

var startAt = time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)

// shardFile writes shard i of n of a run of total requests, started late.
func shardFile(tb testing.TB, i, n, total int, late time.Duration, edit func(*metrics.RunInfo)) Part {
	tb.Helper()
	spec := Spec{Index: i, Count: n}
	var recs []metrics.Record
	for _, j := range spec.Indices(total) {
		at := time.Duration(j) * 10 * time.Millisecond
		recs = append(recs, metrics.Record{
			RequestID: fmt.Sprintf("r-%d", j), Scheduled: at, Dispatched: at, Start: at, PromptLen: 10 + j,
			TTFT: 5 * time.Millisecond, ITL: []time.Duration{time.Millisecond}, Latency: 6 * time.Millisecond,
			OutputTokens: 2, Success: true,
		})
	}
	info := metrics.RunInfo{Date: "20261201-200001", Backend: "openai", ModelID: "m", NumPrompts: total, RequestRate: 100, Extras: true,
		Metadata: [][2]string{{"scenario", "s"}, {"shard", spec.String()}, {"shard_requests", fmt.Sprint(total)},
			{"shard_start", startAt.Add(late).Format(time.RFC3339Nano)}, {"start_at", startAt.Format(time.RFC3339Nano)}}}
	if edit != nil {
		edit(&info)
	}
	data := metrics.Summarize(recs, time.Duration(total)*10*time.Millisecond, metrics.Options{}).ResultJSON(info, true)
	return Part{Name: fmt.Sprintf("shard-%d.json", i), Data: data}
}

func TestMerge(t *testing.T) {
	parts := []Part{shardFile(t, 2, 3, 10, time.Millisecond, nil), shardFile(t, 1, 3, 10, 0, nil), shardFile(t, 3, 3, 10, 4*time.Millisecond, nil)}
	m, err := Merge(parts)
	require.NoError(t, err)
	require.Len(t, m.Records, 10)
	for j, r := range m.Records {
		assert.Equal(t, fmt.Sprintf("r-%d", j), r.RequestID)
		assert.Equal(t, 10+j, r.PromptLen)
	}
	assert.Equal(t, 4*time.Millisecond, m.Skew)
	assert.Equal(t, 71*time.Millisecond, m.Records[7].Start, "shard 2 started 1 ms late, so its times move 1 ms on")
	assert.Equal(t, 104*time.Millisecond, m.Duration)
	s, err := m.Summary(nil)
	require.NoError(t, err)
	assert.Equal(t, 10, s.Completed)
	assert.Equal(t, 20, s.TotalOutput)
	assert.Equal(t, 145, s.TotalInput)
	js := string(s.ResultJSON(m.Info, true))
	for _, want := range []string{`"scenario": "s"`, `"shards": "3"`, `"clock_skew_ms": "4.0"`, `"start_at": "2026-12-01T20:00:00Z"`} {
		assert.Contains(t, js, want)
	}
	for _, gone := range []string{`"shard":`, `"shard_start"`, `"shard_requests"`} {
		assert.NotContains(t, js, gone)
	}
}

// TestMergeFailsClosed checks every way a merge can be wrong: each is an
// error naming the files, never a merged result.
func TestMergeFailsClosed(t *testing.T) {
	ok := func(i int) Part { return shardFile(t, i, 3, 10, 0, nil) }
	for _, tc := range []struct {
		name  string
		parts []Part
		err   string
	}{
		{"none", nil, "merge: no shard results"},
		{"missing", []Part{ok(1), ok(3)}, "missing shards: 2/3 (got 2 of 3 files)"},
		{"twice", []Part{ok(1), ok(2), ok(2), ok(3)}, "shard-2.json and shard-2.json are both shard 2/3"},
		{"other N", []Part{ok(1), ok(2), shardFile(t, 3, 4, 10, 0, nil)}, "shard 3/4, but shard-1.json is shard 1/3"},
		{"other run", []Part{ok(1), ok(2), shardFile(t, 3, 3, 10, 0, func(i *metrics.RunInfo) { i.RequestRate = 50 })}, "request_rate 100.0 against 50.0"},
		{"other scenario", []Part{ok(1), ok(2), shardFile(t, 3, 3, 10, 0, func(i *metrics.RunInfo) { i.Metadata[0][1] = "t" })}, `scenario "s" against "t"`},
		{"other start", []Part{ok(1), ok(2), shardFile(t, 3, 3, 10, 0, func(i *metrics.RunInfo) { i.Metadata[4][1] = "2026-12-01T20:00:01Z" })}, "start_at 2026-12-01T20:00:00Z against 2026-12-01T20:00:01Z"},
		{"not a shard", []Part{{Name: "x.json", Data: []byte(`{"duration": 1.0}`)}}, `x.json: not a shard's result`},
		{"not json", []Part{{Name: "x.json", Data: []byte(`[1]`)}}, `x.json: read result: not a JSON object`},
		{"bad shard", []Part{shardFile(t, 1, 3, 10, 0, func(i *metrics.RunInfo) { i.Metadata[1][1] = "4/3" })}, `shard "4/3"`},
		{"truncated", []Part{shardFile(t, 1, 3, 12, 0, func(i *metrics.RunInfo) { i.Metadata[2][1] = "20" })}, "holds 4 records, want 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Merge(tc.parts)
			assert.Nil(t, m)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// TestMergeGoodputNeedsSLOs: a result file does not record the goodput
// SLOs, so the merge refuses to recompute (or drop) goodput without them.
func TestMergeGoodputNeedsSLOs(t *testing.T) {
	var parts []Part
	for i := 1; i <= 2; i++ {
		p := shardFile(t, i, 2, 4, 0, nil)
		p.Data = []byte(strings.Replace(string(p.Data), `"request_goodput": null`, `"request_goodput": 3.0`, 1))
		parts = append(parts, p)
	}
	m, err := Merge(parts)
	require.NoError(t, err)
	_, err = m.Summary(nil)
	assert.ErrorContains(t, err, "give the run's goodput SLOs (--goodput)")
	s, err := m.Summary(map[string]float64{"ttft": 100})
	require.NoError(t, err)
	assert.Equal(t, 4, s.Completed)
}

// TestMergeInfiniteBurstiness merges shards whose header holds a bare
// Infinity (burstiness inf: evenly spaced arrivals), as Python's json.dump
// and servegate write it; the merged header keeps it.
func TestMergeInfiniteBurstiness(t *testing.T) {
	inf := func(info *metrics.RunInfo) { info.Burstiness = math.Inf(1) }
	parts := []Part{shardFile(t, 1, 2, 6, 0, inf), shardFile(t, 2, 2, 6, 0, inf)}
	require.Contains(t, string(parts[0].Data), `"burstiness": Infinity`)
	m, err := Merge(parts)
	require.NoError(t, err)
	assert.True(t, math.IsInf(m.Info.Burstiness, 1))
	s, err := m.Summary(nil)
	require.NoError(t, err)
	assert.Contains(t, string(s.ResultJSON(m.Info, true)), `"burstiness": Infinity`)
}
