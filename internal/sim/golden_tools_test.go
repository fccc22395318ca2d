package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGoldenToolsReasoning pins the bytes of tool-call and reasoning
// answers (knobs on), built from vLLM v0.13's DeltaMessage, DeltaToolCall,
// ChatMessage and ToolCall (protocol.py) as serving_chat.py dumps them.
// -update rewrites them.
func TestGoldenToolsReasoning(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 25 // long enough that no two tokens share a chunk
	p.ToolCallRate, p.ToolCallArgTokens, p.ReasoningShare = 1, 2, 0.5
	srv, base := start(t, Config{Params: &p})
	msgs := []map[string]any{{"role": "user", "content": "Weather?"}}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	cases := []struct {
		name string
		body any
	}{
		{"chat_stream_tool_call", map[string]any{"messages": msgs, "tools": tools, "max_tokens": 40, "ignore_eos": true, "seed": 1, "stream": true, "stream_options": map[string]any{"include_usage": true}}},
		{"chat_stream_reasoning", map[string]any{"messages": msgs, "max_tokens": 4, "stream": true, "stream_options": map[string]any{"include_usage": true}}},
		{"chat_tool_call", map[string]any{"messages": msgs, "tools": tools, "max_tokens": 40, "ignore_eos": true, "seed": 1}},
		{"chat_reasoning", map[string]any{"messages": msgs, "max_tokens": 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{"X-Request-Id": "golden-" + c.name}
			got := unmerged(t, srv, func() string { return fetchRaw(t, "", base+"/v1/chat/completions", c.body, hdr) })
			got = createdRe.ReplaceAllString(got, `"created":0`)
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -run TestGoldenToolsReasoning -update to create it")
			require.Equal(t, string(want), got)
		})
	}
}
