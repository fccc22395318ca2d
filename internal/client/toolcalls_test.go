package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/metrics"
)

// chatEvent renders one vLLM 0.13 chat chunk with delta (a JSON object)
// and finish reason (null when empty).
func chatEvent(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}` + "\n\n"
}

// chatUsage renders the usage chunk and [DONE].
func chatUsage(completion int, details string) string {
	if details != "" {
		details = `,"completion_tokens_details":` + details
	}
	return fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":7,"total_tokens":%d,"completion_tokens":%d%s}}`+"\n\ndata: [DONE]\n\n", 7+completion, completion, details)
}

// toolStream is a vLLM 0.13 chat stream (hermes tool parser) with a
// little content and two tool calls, the second's arguments split
// across deltas; args2End closes the second call's arguments.
func toolStream(args2End string) string {
	return chatEvent(`{"role":"assistant","content":""}`, "") +
		chatEvent(`{"content":"Let me check."}`, "") +
		chatEvent(`{"tool_calls":[{"id":"chatcmpl-tool-a1","type":"function","index":0,"function":{"name":"get_weather"}}]}`, "") +
		chatEvent(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}`, "") +
		chatEvent(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "") +
		chatEvent(`{"tool_calls":[{"id":"chatcmpl-tool-b2","type":"function","index":1,"function":{"name":"get_time","arguments":""}}]}`, "") +
		chatEvent(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\": \"CET\""}}]}`, "") +
		chatEvent(`{"tool_calls":[{"index":1,"function":{"arguments":"`+args2End+`"}}]}`, "tool_calls") +
		chatUsage(9, "")
}

// TestToolCallStream: streamed tool_calls deltas are assembled per index
// into names and arguments, the finish reason is kept, and the content
// text stays the generated text, over a real SSE server.
func TestToolCallStream(t *testing.T) {
	for _, split := range []int{0, 7} {
		t.Run(fmt.Sprintf("split=%d", split), func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, []byte(toolStream("}")), split)
			rec := newClient(BackendOpenAIChat, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 32})
			if !rec.Success {
				t.Fatalf("failed: %s %s", rec.Failure, rec.Error)
			}
			want := []metrics.ToolCall{
				{ID: "chatcmpl-tool-a1", Name: "get_weather", Arguments: `{"city": "Paris"}`},
				{ID: "chatcmpl-tool-b2", Name: "get_time", Arguments: `{"tz": "CET"}`},
			}
			if fmt.Sprint(rec.ToolCalls) != fmt.Sprint(want) {
				t.Errorf("tool calls %+v\nwant %+v", rec.ToolCalls, want)
			}
			if rec.FinishReason != "tool_calls" || rec.GeneratedText != "Let me check." || rec.OutputTokens != 9 {
				t.Errorf("finish %q text %q tokens %d; want tool_calls, the content, 9", rec.FinishReason, rec.GeneratedText, rec.OutputTokens)
			}
			// The content chunk and six tool-call chunks are output; the
			// role chunk is not.
			if n := 1 + len(rec.ITL); n != 7 {
				t.Errorf("%d output chunks, want 7", n)
			}
			if rec.FirstContent != rec.TTFT {
				t.Errorf("first content %v, want the TTFT %v (content came first)", rec.FirstContent, rec.TTFT)
			}
			checkTimings(t, rec)
		})
	}
}

// TestBrokenToolCall: a call whose arguments never close, or without a
// name, fails the request with a kind of its own and names the call.
func TestBrokenToolCall(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"arguments never close", toolStream(""), `tool call 1 (id "chatcmpl-tool-b2", function "get_time"): arguments are not valid JSON: "{\"tz\": \"CET\""`},
		{"no name", chatEvent(`{"tool_calls":[{"id":"x9","index":0,"function":{"arguments":"{}"}}]}`, "tool_calls") + chatUsage(1, ""), `tool call 0 (id "x9") has no function name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, []byte(tt.body), 0)
			rec := newClient(BackendOpenAIChat, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 32})
			if rec.Success || rec.Failure != metrics.FailureBrokenToolCall || !strings.Contains(rec.Error, tt.want) {
				t.Errorf("success %v failure %q error %q; want %q naming %s", rec.Success, rec.Failure, rec.Error, metrics.FailureBrokenToolCall, tt.want)
			}
			if len(rec.ToolCalls) == 0 {
				t.Errorf("the broken record keeps no tool calls")
			}
		})
	}
}

// TestToolCallsWithoutIndex: a server that sends whole calls without an
// index gets one call per new id.
func TestToolCallsWithoutIndex(t *testing.T) {
	body := chatEvent(`{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}`, "") +
		chatEvent(`{"tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}`, "tool_calls") + chatUsage(2, "")
	srv := newReplay(t, http.StatusOK, []byte(body), 0)
	rec := newClient(BackendOpenAIChat, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 8})
	if !rec.Success || len(rec.ToolCalls) != 2 || rec.ToolCalls[0].Name != "f" || rec.ToolCalls[1].Arguments != "{}" {
		t.Errorf("success %v (%s) calls %+v; want f and g", rec.Success, rec.Error, rec.ToolCalls)
	}
}

// TestConversationPayload: Messages go out as OpenAI chat messages (an
// assistant's tool calls in OpenAI's format, a tool message with its
// tool_call_id), Tools as "tools", and the session id in the session
// header.
func TestConversationPayload(t *testing.T) {
	tools := json.RawMessage(`[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`)
	req := Request{
		OutputLen: 16,
		Messages: []Message{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Content: "Weather in Paris?"},
			{Role: "assistant", ToolCalls: []metrics.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			{Role: "tool", ToolCallID: "call_1", Content: "sunny"},
			{Role: "assistant", Content: "Sunny."},
			{Role: "user", Content: "Thanks"},
		},
		Tools:     tools,
		SessionID: "sess-42",
		RequestID: "r-1",
	}
	tests := []struct {
		backend, header, want string
	}{
		{BackendOpenAIChat, "", `{"max_completion_tokens":16,"messages":[{"content":"Be brief.","role":"system"},{"content":"Weather in Paris?","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"get_weather"},"id":"call_1","type":"function"}]},{"content":"sunny","role":"tool","tool_call_id":"call_1"},{"content":"Sunny.","role":"assistant"},{"content":"Thanks","role":"user"}],"model":"meta-llama/Llama-3.2-1B-Instruct","stream":true,"stream_options":{"include_usage":true},"temperature":0,"tools":[{"function":{"description":"Weather","name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"type":"object"}},"type":"function"}]}`},
		{BackendOpenAIResponses, "x-affinity", `{"input":[{"content":"Be brief.","role":"system"},{"content":"Weather in Paris?","role":"user"},{"arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"get_weather","type":"function_call"},{"call_id":"call_1","output":"sunny","type":"function_call_output"},{"content":"Sunny.","role":"assistant"},{"content":"Thanks","role":"user"}],"max_output_tokens":16,"model":"meta-llama/Llama-3.2-1B-Instruct","stream":true,"temperature":0,"tools":[{"description":"Weather","name":"get_weather","parameters":{"properties":{"city":{"type":"string"}},"type":"object"},"type":"function"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.backend, func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, readFixture(t, "vllm-0.13-chat.sse"), 0)
			c := newClient(tt.backend, srv.URL)
			c.SessionHeader = tt.header
			c.Headers = map[string]string{"x-session-id": "static", "X-Affinity": "static"}
			c.Do(t.Context(), req)
			r, p := srv.seen()
			if got := canon(t, p); got != tt.want {
				t.Errorf("payload\n got %s\nwant %s", got, tt.want)
			}
			header := tt.header
			if header == "" {
				header = DefaultSessionHeader
			}
			if got := r.Header.Get(header); got != "sess-42" {
				t.Errorf("%s = %q, want the session id", header, got)
			}
			if got := r.Header.Get("x-request-id"); got != "r-1" {
				t.Errorf("x-request-id = %q", got)
			}
		})
	}
}

// TestNoOutputLenNoLimit: a turn with no output length (0) sends no
// limit at all, rather than a limit of 0 tokens that a server refuses.
func TestNoOutputLenNoLimit(t *testing.T) {
	for _, backend := range []string{BackendOpenAIChat, BackendOpenAIResponses} {
		t.Run(backend, func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, readFixture(t, "vllm-0.13-chat.sse"), 0)
			c := newClient(backend, srv.URL)
			c.Do(t.Context(), Request{Messages: []Message{{Role: "user", Content: "Hi"}}})
			_, p := srv.seen()
			got := canon(t, p)
			for _, k := range []string{"max_completion_tokens", "max_output_tokens", "max_tokens"} {
				if strings.Contains(got, `"`+k+`"`) {
					t.Errorf("payload %s sends %s with no output length", got, k)
				}
			}
		})
	}
}
