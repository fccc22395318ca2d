package scenario

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sessionScenario = `name: chat
target: {kind: inproc, profile: instant}
sessions:
  source:
    kind: synthetic
    num_conversations: 4
    prompt_input:
      num_turns: {distribution: constant, value: 6}
      num_tokens: {distribution: uniform, min: 20, max: 40}
    prompt_output:
      num_tokens: {distribution: constant, value: 8}
  arrival: {rate: 4}
  max_active: 2
  think_time: {distribution: constant, value: 0.1}
  tools:
    definitions:
      - type: function
        function: {name: search, parameters: {type: object}}
    result_tokens: {distribution: uniform, min: 10, max: 20}
slo:
  bounds: ["p99_ttft_later_turns_ms <= 500", "tool_cap_hits == 0"]
`

func TestSessionScenarioDefaults(t *testing.T) {
	sc, err := Parse("chat.yaml", []byte(sessionScenario))
	require.NoError(t, err)
	s := sc[0].Sessions
	require.NotNil(t, s)
	assert.Equal(t, "openai-chat", sc[0].Backend, "a session scenario sends conversations")
	assert.Equal(t, "/v1/chat/completions", sc[0].Endpoint)
	assert.Equal(t, "x-session-id", s.Header)
	assert.Equal(t, 1.0, s.Arrival.Burstiness)
	assert.Equal(t, 8, s.Tools.MaxRounds)
	assert.Equal(t, "synthetic", s.Source.Kind)
	assert.Equal(t, 4, s.Source.NumConversations, "the source's inline keys decode")
	assert.JSONEq(t, `[{"type":"function","function":{"name":"search","parameters":{"type":"object"}}}]`, string(s.ToolsJSON()))
}

func TestSessionScenarioErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"dataset with sessions", sessionScenario + "dataset: {name: random}\n",
			"chat.yaml:22: dataset: a session scenario takes its conversations from sessions.source; remove dataset"},
		{"request rate", sessionScenario + "load: {request_rate: 3}\n",
			"chat.yaml:22: load.request_rate: not for a session scenario; use sessions.arrival.rate"},
		{"completions backend", sessionScenario + "backend: openai\n",
			"chat.yaml:22: backend: a session scenario sends conversations: it needs openai-chat or openai-responses, got openai"},
		{"bad source kind", replace(sessionScenario, "kind: synthetic", "kind: podcast"),
			"chat.yaml:5: sessions.source.kind: unknown kind \"podcast\""},
		{"bad source distribution", replace(sessionScenario, "min: 20, max: 40", "min: 40, max: 20"),
			"chat.yaml:9: sessions.source.prompt_input.num_tokens: uniform needs 0 <= min <= max"},
		{"negative think time", replace(sessionScenario, "value: 0.1", "value: -1"),
			"chat.yaml:14: sessions.think_time.value: -1 must not be negative"},
		{"rate zero", replace(sessionScenario, "rate: 4", "rate: 0"),
			"chat.yaml:12: sessions.arrival.rate: must be a positive rate"},
		{"max active over", replace(sessionScenario, "max_active: 2", "max_active: 100001"),
			"chat.yaml:13: sessions.max_active: 100001 is over the maximum 100000"},
		{"tool without name", replace(sessionScenario, "{name: search, ", "{"),
			"chat.yaml:18: sessions.tools.definitions[0].function.name: required"},
		{"whole tool tokens", replace(sessionScenario, "min: 10, max: 20", "min: 10.5, max: 20"),
			"chat.yaml:19: sessions.tools.result_tokens: uniform bounds must be whole numbers"},
		{"zero rounds", replace(sessionScenario, "    result_tokens:", "    max_rounds: 0\n    result_tokens:"),
			"sessions.tools.max_rounds: must be at least 1, got 0"},
		{"unknown session key", replace(sessionScenario, "max_active: 2", "max_sessions: 2"),
			"chat.yaml:13: sessions.max_sessions: unknown key"},
		{"session metric without sessions", "name: x\nslo: {bounds: [\"p99_ttft_later_turns_ms <= 5\"]}\n",
			"chat.yaml:2: slo.bounds[0]: p99_ttft_later_turns_ms exists only in a session run; add a sessions block"},
		{"session metric without sessions", "name: x\nslo: {bounds: [\"tool_cap_hits == 0\"]}\n",
			"slo.bounds[0]: tool_cap_hits exists only in a session run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("chat.yaml", []byte(tt.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// replace replaces the first old in s, which must hold it.
func replace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("replace: " + old + " not in the scenario")
	}
	return strings.Replace(s, old, new, 1)
}

func TestIsSessionMetric(t *testing.T) {
	for name, want := range map[string]bool{
		"p99_ttft_later_turns_ms": true, "mean_ttft_first_turn_ms": true, "p50_session_duration_ms": true,
		"sessions": true, "session_goodput_ratio": true, "tool_cap_hits": true, "mean_tool_rounds": true,
		"p99_ttft_ms": false, "goodput_ratio": false, "failed": false,
	} {
		assert.Equal(t, want, IsSessionMetric(name), name)
	}
}
