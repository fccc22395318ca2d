package client

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/metrics"
)

// respEvent renders one Responses API event as vLLM 0.13 writes it: an
// "event:" line with its type, then its JSON (fields in the OpenAI
// types' alphabetical order, type last).
func respEvent(typ, fields string) string {
	if fields != "" {
		fields += ","
	}
	return "event: " + typ + "\ndata: {" + fields + `"sequence_number":0,"type":"` + typ + `"}` + "\n\n"
}

// respCompleted is the response.completed event with usage.
func respCompleted(status string, output, reasoning int) string {
	return respEvent("response.completed", fmt.Sprintf(`"response":{"id":"resp_1","object":"response","status":%q,"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d,"tool_output_tokens":0},"total_tokens":%d}}`, status, output, reasoning, 12+output))
}

// respStream is a Responses stream as vLLM 0.13 sends one: created, two
// reasoning deltas, three text deltas, a function call, completed.
func respStream(end string) string {
	return respEvent("response.created", `"response":{"id":"resp_1","status":"in_progress","usage":null}`) +
		respEvent("response.in_progress", `"response":{"id":"resp_1","status":"in_progress","usage":null}`) +
		respEvent("response.output_item.added", `"item":{"id":"rs_1","summary":[],"type":"reasoning","status":"in_progress"},"output_index":0`) +
		respEvent("response.reasoning_part.added", `"content_index":0,"item_id":"rs_1","output_index":0,"part":{"text":"","type":"reasoning_text"}`) +
		respEvent("response.reasoning_text.delta", `"content_index":0,"delta":"Think","item_id":"rs_1","output_index":0`) +
		respEvent("response.reasoning_text.delta", `"content_index":1,"delta":"ing.","item_id":"rs_1","output_index":0`) +
		respEvent("response.reasoning_text.done", `"content_index":2,"item_id":"rs_1","output_index":0,"text":"Thinking."`) +
		respEvent("response.output_item.added", `"item":{"content":[],"id":"msg_1","role":"assistant","status":"in_progress","type":"message"},"output_index":1`) +
		respEvent("response.output_text.delta", `"content_index":0,"delta":"It is","item_id":"msg_1","logprobs":[],"output_index":1`) +
		respEvent("response.output_text.delta", `"content_index":1,"delta":" \"sunny\"","item_id":"msg_1","logprobs":[],"output_index":1`) +
		respEvent("response.output_text.delta", `"content_index":2,"delta":"","item_id":"msg_1","logprobs":[],"output_index":1`) +
		respEvent("response.output_text.done", `"content_index":3,"item_id":"msg_1","logprobs":[],"output_index":1,"text":"It is \"sunny\""`) +
		respEvent("response.output_item.added", `"item":{"arguments":"","call_id":"call_7","id":"fc_1","name":"get_weather","status":"in_progress","type":"function_call"},"output_index":2`) +
		respEvent("response.function_call_arguments.delta", `"delta":"{\"city\":","item_id":"fc_2","output_index":2`) +
		respEvent("response.function_call_arguments.delta", `"delta":" \"Paris\"}","item_id":"fc_2","output_index":2`) +
		end
}

// TestResponsesStream: the Responses backend gives the chat backend's
// record fields: TTFT at the first output of any kind, first reasoning
// and first content, the answer text, tool calls, status, and token
// counts from usage.
func TestResponsesStream(t *testing.T) {
	done := respEvent("response.function_call_arguments.done", `"arguments":"{\"city\": \"Paris\"}","item_id":"fc_2","name":"get_weather","output_index":2`) +
		respCompleted("completed", 9, 2)
	for _, split := range []int{0, 13} {
		t.Run(fmt.Sprintf("split=%d", split), func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, []byte(respStream(done)), split)
			rec := newClient(BackendOpenAIResponses, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 16})
			if !rec.Success {
				t.Fatalf("failed: %s %s", rec.Failure, rec.Error)
			}
			if rec.GeneratedText != `It is "sunny"` || rec.FinishReason != "completed" {
				t.Errorf("text %q status %q", rec.GeneratedText, rec.FinishReason)
			}
			if rec.OutputTokens != 9 || rec.ReasoningTokens != 2 || rec.ContentTokens != 7 || rec.ServerPromptTokens != 12 {
				t.Errorf("output %d reasoning %d content %d prompt %d; want 9 2 7 12", rec.OutputTokens, rec.ReasoningTokens, rec.ContentTokens, rec.ServerPromptTokens)
			}
			want := []metrics.ToolCall{{ID: "call_7", Name: "get_weather", Arguments: `{"city": "Paris"}`}}
			if fmt.Sprint(rec.ToolCalls) != fmt.Sprint(want) {
				t.Errorf("tool calls %+v, want %+v (the done event's arguments)", rec.ToolCalls, want)
			}
			// Output chunks: 2 reasoning, 2 non-empty text, the call's
			// item and 2 argument deltas.
			if n := 1 + len(rec.ITL); n != 7 {
				t.Errorf("%d output chunks, want 7", n)
			}
			if rec.FirstReasoning != rec.TTFT || rec.FirstContent != rec.TTFT+rec.ITL[0]+rec.ITL[1] {
				t.Errorf("ttft %v first reasoning %v first content %v (itl %v)", rec.TTFT, rec.FirstReasoning, rec.FirstContent, rec.ITL)
			}
			checkTimings(t, rec)
		})
	}
}

// TestResponsesWithoutReasoningUsage: usage without reasoning tokens
// leaves the count to the reasoning deltas; response.incomplete (OpenAI's
// end at max_output_tokens) ends a stream like completed.
func TestResponsesWithoutReasoningUsage(t *testing.T) {
	end := respEvent("response.incomplete", `"response":{"status":"incomplete","usage":{"input_tokens":12,"output_tokens":8}}`)
	srv := newReplay(t, http.StatusOK, []byte(respStream(end)), 0)
	rec := newClient(BackendOpenAIResponses, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 8})
	if !rec.Success || rec.ReasoningTokens != 2 || rec.ContentTokens != 6 || rec.FinishReason != "incomplete" {
		t.Errorf("success %v (%s) reasoning %d content %d status %q", rec.Success, rec.Error, rec.ReasoningTokens, rec.ContentTokens, rec.FinishReason)
	}
	if rec.ToolCalls[0].Arguments != `{"city": "Paris"}` {
		t.Errorf("arguments from the deltas %q", rec.ToolCalls[0].Arguments)
	}
}

// TestResponsesFailures: a stream without its completed event, a failed
// response, an error event, a broken function call and usage below the
// deltas each fail with their kind and message.
func TestResponsesFailures(t *testing.T) {
	tests := []struct {
		name string
		body string
		want metrics.FailureKind
		msg  string
	}{
		{"no completed event", respStream(""), metrics.FailureMissingCompleted, "without response.completed"},
		{"failed", respStream(respEvent("response.failed", `"response":{"status":"failed","error":{"code":"server_error","message":"engine died"}}`)), metrics.FailureStream, "engine died"},
		{"error event", respStream(respEvent("error", `"code":"500","message":"boom","param":null`)), metrics.FailureStream, "boom"},
		{"call that parses", respStream(respCompleted("completed", 9, 0)), metrics.FailureNone, ""},
		{"arguments never close", strings.Replace(respStream(respCompleted("completed", 9, 0)), `\"Paris\"}`, `\"Paris`, 1), metrics.FailureBrokenToolCall, `function "get_weather"`},
		{"usage below deltas", respStream(respCompleted("completed", 5, 0)), metrics.FailureUsageMismatch, "usage reports 5 completion tokens but the stream carried 7 output chunks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, []byte(tt.body), 0)
			rec := newClient(BackendOpenAIResponses, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 16})
			if rec.Failure != tt.want || rec.Success != (tt.want == metrics.FailureNone) || !strings.Contains(rec.Error, tt.msg) {
				t.Errorf("success %v failure %q error %q; want %q with %q", rec.Success, rec.Failure, rec.Error, tt.want, tt.msg)
			}
		})
	}
}

// TestResponsesOutputCap: max_output_tokens set in extra_body caps the
// stream as max_tokens does for the other backends.
func TestResponsesOutputCap(t *testing.T) {
	var b strings.Builder
	for range 20 {
		b.WriteString(respEvent("response.output_text.delta", `"content_index":0,"delta":" x","item_id":"m","output_index":0`))
	}
	b.WriteString(respCompleted("completed", 20, 0))
	for _, tt := range []struct {
		extra map[string]any
		want  metrics.FailureKind
	}{{nil, metrics.FailureNone}, {map[string]any{"max_output_tokens": 1}, metrics.FailureExcessOutput}} {
		srv := newReplay(t, http.StatusOK, []byte(b.String()), 0)
		c := newClient(BackendOpenAIResponses, srv.URL)
		c.ExtraBody = tt.extra
		rec := c.Do(t.Context(), Request{Prompt: "q", OutputLen: 64})
		if rec.Failure != tt.want {
			t.Errorf("extra body %v: failure %q (%s), want %q", tt.extra, rec.Failure, rec.Error, tt.want)
		}
	}
}
