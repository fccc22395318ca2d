package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// responsesRun is what a Responses stream carried.
type responsesRun struct {
	types              []string
	text, reasoning    string
	args, callName     string
	completed          map[string]any
	argsDone, textDone string
}

func readResponses(tb testing.TB, r streamResult) responsesRun {
	tb.Helper()
	require.NoError(tb, r.err)
	require.Equal(tb, http.StatusOK, r.status, "%s", r.body)
	var out responsesRun
	for i, e := range r.events {
		var ev map[string]any
		require.NoError(tb, json.Unmarshal([]byte(e.data), &ev), e.data)
		require.Equal(tb, float64(i), ev["sequence_number"], "sequence numbers count the events")
		typ := ev["type"].(string)
		out.types = append(out.types, typ)
		switch typ {
		case "response.output_text.delta":
			out.text += ev["delta"].(string)
		case "response.reasoning_text.delta":
			out.reasoning += ev["delta"].(string)
		case "response.function_call_arguments.delta":
			out.args += ev["delta"].(string)
		case "response.function_call_arguments.done":
			out.argsDone = ev["arguments"].(string)
		case "response.output_text.done":
			out.textDone = ev["text"].(string)
		case "response.output_item.added":
			if item := ev["item"].(map[string]any); item["type"] == "function_call" {
				out.callName = item["name"].(string)
			}
		case "response.completed":
			out.completed = ev["response"].(map[string]any)
		}
	}
	return out
}

func TestResponsesStream(t *testing.T) {
	p := toolParams()
	p.ReasoningShare = 0.25
	srv, url := start(t, Config{Params: &p})
	ctx := context.Background()
	tools := []any{map[string]any{"type": "function", "name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	t.Run("text", func(t *testing.T) {
		r := post(ctx, url+"/v1/responses", map[string]any{"input": "Say hi.", "instructions": "Be brief.", "max_output_tokens": 20,
			"ignore_eos": true, "stream": true}, map[string]string{"X-Request-Id": "resp-text"})
		a := readResponses(t, r)
		assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}, a.types[:4])
		assert.Equal(t, "response.completed", a.types[len(a.types)-1])
		assert.Len(t, strings.Fields(a.reasoning), 5)
		assert.Len(t, strings.Fields(a.text), 15)
		assert.Equal(t, a.text, a.textDone)
		require.NotNil(t, a.completed)
		assert.Equal(t, "completed", a.completed["status"])
		assert.Equal(t, "resp_resp-text", a.completed["id"])
		u := a.completed["usage"].(map[string]any)
		tr, ok := srv.Truth("resp_resp-text")
		require.True(t, ok)
		assert.Equal(t, float64(tr.PromptTokens), u["input_tokens"])
		assert.Equal(t, 20.0, u["output_tokens"])
		assert.Equal(t, 5, tr.ReasoningTokens)
		// vLLM 0.13 counts no reasoning tokens outside gpt-oss.
		assert.Equal(t, 0.0, u["output_tokens_details"].(map[string]any)["reasoning_tokens"])
		out := a.completed["output"].([]any)
		require.Len(t, out, 2)
		assert.Equal(t, "reasoning", out[0].(map[string]any)["type"])
		assert.Equal(t, "message", out[1].(map[string]any)["type"])
		// The ground truth has a chunk for every engine output, the first
		// when the first delta went out.
		assert.Equal(t, 20, sum(tr.ChunkTokens))
	})
	t.Run("function call", func(t *testing.T) {
		r := post(ctx, url+"/v1/responses", map[string]any{"input": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Weather in Paris?"}}}},
			"tools": tools, "max_output_tokens": 64, "stream": true}, nil)
		a := readResponses(t, r)
		assert.Equal(t, "get_weather", a.callName)
		assert.Equal(t, a.args, a.argsDone)
		var args map[string]string
		require.NoError(t, json.Unmarshal([]byte(a.args), &args), a.args)
		assert.Contains(t, args, "city")
		out := a.completed["output"].([]any)
		last := out[len(out)-1].(map[string]any)
		assert.Equal(t, "function_call", last["type"])
		assert.Equal(t, a.args, last["arguments"])
		assert.Contains(t, a.types, "response.function_call_arguments.delta")
	})
	t.Run("history with a function call output", func(t *testing.T) {
		r := post(ctx, url+"/v1/responses", map[string]any{"input": []any{
			map[string]any{"role": "user", "content": "Weather in Paris?"},
			map[string]any{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": `{"city": "Paris"}`},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "21C"}},
			"tools": tools, "tool_choice": "none", "max_output_tokens": 8, "stream": true}, nil)
		a := readResponses(t, r)
		assert.NotEmpty(t, a.text)
		assert.Empty(t, a.callName)
	})
}

func TestResponsesNotStreamed(t *testing.T) {
	p := testParams()
	_, url := start(t, Config{Params: &p})
	r := post(context.Background(), url+"/v1/responses", map[string]any{"input": "Say hi.", "max_output_tokens": 6, "ignore_eos": true}, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	var resp struct {
		ID     string `json:"id"`
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(r.body, &resp))
	assert.True(t, strings.HasPrefix(resp.ID, "resp_"))
	assert.Equal(t, "response", resp.Object)
	assert.Equal(t, "completed", resp.Status)
	require.Len(t, resp.Output, 1)
	assert.Len(t, strings.Fields(resp.Output[0].Content[0].Text), 6)
	assert.Equal(t, 6, resp.Usage.OutputTokens)
	assert.Equal(t, resp.Usage.InputTokens+6, resp.Usage.TotalTokens)

	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"no input", map[string]any{"max_output_tokens": 4}, 400},
		{"previous response", map[string]any{"input": "x", "previous_response_id": "resp_x"}, 404},
		{"other model", map[string]any{"input": "x", "model": "gpt-4"}, 404},
		{"non-function tool", map[string]any{"input": "x", "tools": []any{map[string]any{"type": "web_search_preview"}}}, 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := post(context.Background(), url+"/v1/responses", c.body, nil)
			assert.Equal(t, c.status, r.status, "%s", r.body)
		})
	}
}

// TestResponsesFaults: the faults a request draws (here by header) happen
// on the Responses endpoint too, streamed or not, as its ground truth
// says they did: an abort cuts the stream before response.completed, an
// error ends it with an error event, a malformed event is not JSON, a
// stall delays the output.
func TestResponsesFaults(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 5
	s, base := start(t, Config{Params: &p})
	body := func(stream bool) map[string]any {
		return map[string]any{"input": "Hi there", "max_output_tokens": 8, "ignore_eos": true, "stream": stream}
	}
	completed := func(r streamResult) bool {
		for _, e := range r.events {
			if strings.Contains(e.data, `"type":"response.completed"`) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		fault  string
		stream bool
		check  func(t *testing.T, r streamResult)
	}{
		{"abort_after=2", true, func(t *testing.T, r streamResult) {
			require.Error(t, r.err, "the connection is cut mid-stream")
			assert.False(t, completed(r))
		}},
		{"error_after=2", true, func(t *testing.T, r streamResult) {
			require.NoError(t, r.err)
			assert.False(t, completed(r))
			require.NotEmpty(t, r.events)
			assert.Contains(t, r.events[len(r.events)-1].data, `"type":"error"`)
		}},
		{"malformed_after=1", true, func(t *testing.T, r streamResult) {
			bad := 0
			for _, e := range r.events {
				if !json.Valid([]byte(e.data)) {
					bad++
				}
			}
			assert.Equal(t, 1, bad, "one event is not JSON")
		}},
		{"stall_ms=300,stall_after=1", true, func(t *testing.T, r streamResult) {
			require.True(t, completed(r))
			last := r.events[len(r.events)-1].at
			assert.GreaterOrEqual(t, last, 300*time.Millisecond)
		}},
		{"abort_after=0", false, func(t *testing.T, r streamResult) {
			require.Error(t, r.err)
		}},
		{"error_after=0", false, func(t *testing.T, r streamResult) {
			assert.Equal(t, http.StatusInternalServerError, r.status, "%s", r.body)
		}},
		{"malformed_after=0", false, func(t *testing.T, r streamResult) {
			assert.Equal(t, http.StatusOK, r.status)
			assert.False(t, json.Valid(r.body), "%s", r.body)
		}},
	} {
		t.Run(fmt.Sprintf("%s stream=%v", c.fault, c.stream), func(t *testing.T) {
			id := fmt.Sprintf("resp-fault-%s-%v", c.fault, c.stream)
			r := post(context.Background(), base+"/v1/responses", body(c.stream), map[string]string{FaultHeader: c.fault, "X-Request-Id": id})
			tr, ok := s.Truth(id)
			require.True(t, ok)
			require.NotEmpty(t, tr.Fault)
			c.check(t, r)
		})
	}
}
