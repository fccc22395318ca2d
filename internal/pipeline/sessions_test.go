package pipeline

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/report"
)

const sessionsTiny = `
name: sessions-tiny
target: {kind: inproc, profile: instant}
sessions:
  source:
    kind: synthetic
    num_conversations: 6
    prompt_input:
      num_turns: {distribution: constant, value: 6}
      num_tokens: {distribution: constant, value: 24}
    prompt_output:
      num_tokens: {distribution: constant, value: 6}
  arrival: {rate: 100}
  max_active: 3
  think_time: {distribution: constant, value: 0.01}
  warmups: 1
load: {max_duration: 1m}
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
slo:
  bounds: ["sessions == 5", "p99_ttft_later_turns_ms >= 0", "tool_cap_hits == 0"]
`

// A session scenario goes through the one Plan and the one executor:
// NewPlan, Prepare (the conversations), Execute (RunSessions), the
// summary's session figures, the SLO verdicts, the result JSON and the
// benchfmt units.
func TestSessionScenarioRuns(t *testing.T) {
	o := execute(t, parse(t, sessionsTiny), Hooks{})
	require.Len(t, o.Plan.Conversations(), 6)
	require.Empty(t, o.Invalid())
	assert.Len(t, o.Result.Records, 15, "5 measured sessions of 3 user turns")
	assert.Len(t, o.Result.Warmups, 3, "1 warm-up session of 3 user turns")
	for _, v := range o.Verdicts {
		assert.True(t, v.Pass, "%s: %v", v.Bound.Metric, v.Measured)
	}
	require.NotNil(t, o.Summary.Sessions)
	assert.Equal(t, 5, o.Summary.Sessions.Sessions)
	assert.Equal(t, 5, o.Summary.Sessions.TTFTFirstTurn.Count)
	assert.Equal(t, 10, o.Summary.Sessions.TTFTLaterTurns.Count)

	var res map[string]any
	require.NoError(t, json.Unmarshal(o.ResultJSON(o.RunInfo(), true), &res))
	for _, k := range []string{"sessions", "p99_ttft_later_turns_ms", "p99_ttft_first_turn_ms", "p99_session_duration_ms", "session_ids", "session_turns"} {
		assert.Contains(t, res, k)
	}
	var units []string
	for _, m := range o.BenchMetrics() {
		units = append(units, m.Unit)
	}
	for _, u := range []string{"ttft-p99-sec", "ttft-later-p99-sec", "ttft-first-p99-sec", "session-duration-p99-sec", "tool-cap-hits"} {
		assert.Contains(t, units, u)
	}
	assert.True(t, slices.ContainsFunc(o.BenchConfig(), func(c report.BenchConfig) bool {
		return c.Key == "dataset" && c.Value == "sessions-synthetic"
	}))
	var html bytes.Buffer
	require.NoError(t, report.WriteHTMLReport(&html, report.HTMLReport{Records: o.Result.Records}))
	assert.Contains(t, html.String(), "TTFT by turn position")
}
