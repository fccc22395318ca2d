package metrics

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sessionRec builds a successful session record.
func sessionRec(id string, turn, round int, start, ttft, lat time.Duration) Record {
	return Record{SessionID: id, Turn: turn, ToolRound: round, Start: start, TTFT: ttft, Latency: lat,
		Success: true, OutputTokens: 2, PromptLen: 10, RequestID: id}
}

func sessionRecords() []Record {
	ms := time.Millisecond
	failed := sessionRec("b", 1, 0, 900*ms, 0, 0)
	failed.Success, failed.Failure = false, FailureHTTPStatus
	capped := sessionRec("a", 1, 1, 700*ms, 30*ms, 50*ms)
	capped.ToolCapHit = true
	return []Record{
		sessionRec("a", 0, 0, 0, 100*ms, 200*ms),
		sessionRec("b", 0, 0, 50*ms, 300*ms, 400*ms),
		sessionRec("a", 1, 0, 500*ms, 20*ms, 100*ms),
		capped,
		failed,
		{SessionID: "c", Unsent: true, Failure: FailureCanceled},
	}
}

func TestSummarizeSessions(t *testing.T) {
	s := Summarize(sessionRecords(), time.Second, Options{Goodput: map[string]float64{"ttft": 150}})
	require.NotNil(t, s.Sessions)
	tests := []struct {
		name string
		want float64
	}{
		{"sessions", 2},
		{"mean_ttft_first_turn_ms", 200},
		{"p100_ttft_first_turn_ms", 300},
		{"mean_ttft_later_turns_ms", 25},
		{"p0_ttft_later_turns_ms", 20},
		// a: 0 → 750 ms; b: 50 → 900 ms (its failed request counts).
		{"mean_session_duration_ms", 800},
		{"p100_session_duration_ms", 850},
		// a meets ttft <= 150 ms everywhere; b fails (300 ms, then a failure).
		{"session_goodput_ratio", 0.5},
		{"tool_rounds", 1},
		{"mean_tool_rounds", 0.25},
		{"tool_cap_hits", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.True(t, KnownMetric(tt.name))
			v, ok := s.Value(tt.name)
			require.True(t, ok)
			assert.InDelta(t, tt.want, v, 1e-9)
		})
	}
}

func TestSessionMetricsMissingOnSingleTurn(t *testing.T) {
	recs := []Record{{Success: true, TTFT: time.Millisecond, Latency: 2 * time.Millisecond, OutputTokens: 2}}
	s := Summarize(recs, time.Second, Options{})
	assert.Nil(t, s.Sessions)
	for _, name := range []string{"p99_ttft_later_turns_ms", "sessions", "tool_cap_hits", "mean_session_duration_ms"} {
		_, ok := s.Value(name)
		assert.False(t, ok, name)
	}
	var keys map[string]any
	require.NoError(t, json.Unmarshal(s.ResultJSON(RunInfo{Extras: true}, true), &keys))
	for _, k := range []string{"sessions", "session_ids", "p99_ttft_later_turns_ms", "tool_cap_hits"} {
		assert.NotContains(t, keys, k)
	}
}

func TestSessionGoodputNeedsGoodput(t *testing.T) {
	s := Summarize(sessionRecords(), time.Second, Options{})
	_, ok := s.Value(SessionGoodputRatio)
	assert.False(t, ok)
}

func TestSessionResultRoundTrip(t *testing.T) {
	recs := sessionRecords()
	s := Summarize(recs, time.Second, Options{})
	data := s.ResultJSON(RunInfo{Extras: true}, true)
	var keys map[string]any
	require.NoError(t, json.Unmarshal(data, &keys))
	for _, k := range []string{"sessions", "p99_ttft_later_turns_ms", "mean_ttft_first_turn_ms", "p99_session_duration_ms", "tool_rounds", "tool_cap_hits", "session_goodput_ratio"} {
		assert.Contains(t, keys, k)
	}
	assert.Nil(t, keys["session_goodput_ratio"], "null without slo.goodput")
	back, _, err := RecordsFromResult(data)
	require.NoError(t, err)
	require.Len(t, back, len(recs))
	for i := range recs {
		assert.Equal(t, recs[i].SessionID, back[i].SessionID)
		assert.Equal(t, recs[i].Turn, back[i].Turn)
		assert.Equal(t, recs[i].ToolRound, back[i].ToolRound)
		assert.Equal(t, recs[i].ToolCapHit, back[i].ToolCapHit)
	}
	plain := s.ResultJSON(RunInfo{Extras: true}, false)
	keys = nil
	require.NoError(t, json.Unmarshal(plain, &keys))
	assert.NotContains(t, keys, "session_ids", "per-request arrays only in a detailed result")
	assert.Contains(t, keys, "p99_ttft_later_turns_ms")
}

func TestTTFTByTurn(t *testing.T) {
	got := TTFTByTurn(sessionRecords())
	require.Len(t, got, 2)
	assert.Equal(t, 0, got[0].Turn)
	assert.InDelta(t, 200, got[0].Stats.Mean, 1e-9)
	assert.Equal(t, 1, got[1].Turn)
	assert.Equal(t, 2, got[1].Stats.Count, "the failed request is left out")
	assert.Nil(t, TTFTByTurn([]Record{{Success: true}}))
}
