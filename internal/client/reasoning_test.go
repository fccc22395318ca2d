package client

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/metrics"
)

// reasoningStream is a vLLM 0.13 chat stream (a reasoning parser on):
// the role chunk, reasoning deltas in field, the answer, and usage
// (completion tokens, and reasoning tokens when details is set).
func reasoningStream(field string, completion int, details string) string {
	return chatEvent(`{"role":"assistant","content":""}`, "") +
		chatEvent(`{"`+field+`":"Let me think"}`, "") +
		chatEvent(`{"`+field+`":" more."}`, "") +
		chatEvent(`{"content":"\n\n"}`, "") +
		chatEvent(`{"content":"42"}`, "") +
		chatEvent(`{"content":"."}`, "stop") +
		chatUsage(completion, details)
}

// TestReasoningStream: reasoning chunks count for TTFT (vLLM's first
// token of any kind) but not for the first content token, in either
// field; reasoning and content tokens come from usage when it reports
// them, else from the chunks.
func TestReasoningStream(t *testing.T) {
	tests := []struct {
		name                string
		body                string
		reasoning, content  int
		output, firstChunks int
	}{
		{"reasoning_content, counted", reasoningStream("reasoning_content", 5, ""), 2, 3, 5, 3},
		{"reasoning, counted", reasoningStream("reasoning", 5, ""), 2, 3, 5, 3},
		{"usage reports reasoning", reasoningStream("reasoning_content", 9, `{"reasoning_tokens":6}`), 6, 3, 9, 3},
		{"usage reports 0 reasoning", reasoningStream("reasoning_content", 5, `{"reasoning_tokens":0}`), 2, 3, 5, 3},
		{"both fields in one delta", chatEvent(`{"reasoning_content":"hm","reasoning":"hm"}`, "") + chatEvent(`{"content":"ok"}`, "stop") + chatUsage(2, ""), 1, 1, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, []byte(tt.body), 11)
			rec := newClient(BackendOpenAIChat, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 16})
			if !rec.Success {
				t.Fatalf("failed: %s %s", rec.Failure, rec.Error)
			}
			if rec.ReasoningTokens != tt.reasoning || rec.ContentTokens != tt.content || rec.OutputTokens != tt.output {
				t.Errorf("reasoning %d content %d output %d, want %d %d %d", rec.ReasoningTokens, rec.ContentTokens, rec.OutputTokens, tt.reasoning, tt.content, tt.output)
			}
			if rec.FirstReasoning != rec.TTFT || rec.FirstReasoning <= 0 {
				t.Errorf("first reasoning %v, want the TTFT %v", rec.FirstReasoning, rec.TTFT)
			}
			// The first content chunk is output chunk tt.firstChunks: its
			// time is the TTFT plus the gaps before it (the same clock
			// readings, so the sum is exact).
			want := rec.TTFT
			for _, g := range rec.ITL[:tt.firstChunks-1] {
				want += g
			}
			if rec.FirstContent != want {
				t.Errorf("first content %v, want %v, the arrival of output chunk %d", rec.FirstContent, want, tt.firstChunks)
			}
			if !strings.HasSuffix(rec.GeneratedText, "42.") && rec.GeneratedText != "ok" {
				t.Errorf("text %q: reasoning leaked into the answer", rec.GeneratedText)
			}
			checkTimings(t, rec)
		})
	}
}

// TestPlainStreamTimes: a stream without reasoning has its first content
// at the TTFT, and no reasoning.
func TestPlainStreamTimes(t *testing.T) {
	srv := newReplay(t, http.StatusOK, readFixture(t, "vllm-0.13-chat.sse"), 0)
	rec := newClient(BackendOpenAIChat, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 64})
	if !rec.Success || rec.FirstContent != rec.TTFT || rec.FirstReasoning != 0 || rec.ReasoningTokens != 0 || rec.ContentTokens != rec.OutputTokens {
		t.Errorf("success %v (%s) ttft %v first content %v first reasoning %v reasoning %d content %d output %d",
			rec.Success, rec.Error, rec.TTFT, rec.FirstContent, rec.FirstReasoning, rec.ReasoningTokens, rec.ContentTokens, rec.OutputTokens)
	}
	if rec.FinishReason == "" {
		t.Errorf("no finish reason recorded")
	}
}

// TestContinuousUsageReasoning: with per-chunk usage the reasoning
// tokens are the reasoning chunks' tokens (two a chunk here, as with
// speculative decoding).
func TestContinuousUsageReasoning(t *testing.T) {
	ev := func(delta string, cum int) string {
		return fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":null}],"usage":{"prompt_tokens":3,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", delta, 3+cum, cum)
	}
	body := ev(`{"role":"assistant","content":""}`, 0) + ev(`{"reasoning_content":"a b"}`, 2) + ev(`{"reasoning_content":" c d"}`, 4) +
		ev(`{"content":"e f"}`, 6) + chatUsage(6, "")
	srv := newReplay(t, http.StatusOK, []byte(body), 0)
	rec := newClient(BackendOpenAIChat, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 16})
	if !rec.Success || rec.ReasoningTokens != 4 || rec.ContentTokens != 2 || fmt.Sprint(rec.ChunkTokens) != "[2 2 2]" {
		t.Errorf("success %v (%s) reasoning %d content %d chunk tokens %v; want 4, 2, [2 2 2]", rec.Success, rec.Error, rec.ReasoningTokens, rec.ContentTokens, rec.ChunkTokens)
	}
}

// TestReasoningFailures: reasoning after the answer began, and usage
// that contradicts the chunks, each fail with a kind of their own; white
// space before the reasoning does not begin the answer.
func TestReasoningFailures(t *testing.T) {
	tests := []struct {
		name string
		body string
		want metrics.FailureKind
		msg  string
	}{
		{"reasoning after content", chatEvent(`{"reasoning_content":"a"}`, "") + chatEvent(`{"content":"b"}`, "") + chatEvent(`{"reasoning_content":"c"}`, "") + chatUsage(3, ""),
			metrics.FailureReasoningAfterContent, "output chunk 3"},
		{"white space before reasoning", chatEvent(`{"content":"\n"}`, "") + chatEvent(`{"reasoning_content":"a"}`, "") + chatEvent(`{"content":"b"}`, "stop") + chatUsage(3, ""),
			metrics.FailureNone, ""},
		{"usage below chunks", reasoningStream("reasoning_content", 4, ""), metrics.FailureUsageMismatch, "usage reports 4 completion tokens but the stream carried 5 output chunks"},
		{"reasoning above completion", reasoningStream("reasoning_content", 5, `{"reasoning_tokens":7}`), metrics.FailureUsageMismatch, "7 reasoning tokens, more than its 5 completion tokens"},
		{"reasoning below reasoning chunks", reasoningStream("reasoning_content", 5, `{"reasoning_tokens":1}`), metrics.FailureUsageMismatch, "1 reasoning tokens but the stream carried 2 reasoning chunks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, []byte(tt.body), 0)
			rec := newClient(BackendOpenAIChat, srv.URL).Do(t.Context(), Request{Prompt: "q", OutputLen: 16})
			if rec.Failure != tt.want || rec.Success != (tt.want == metrics.FailureNone) || !strings.Contains(rec.Error, tt.msg) {
				t.Errorf("success %v failure %q error %q; want %q with %q", rec.Success, rec.Failure, rec.Error, tt.want, tt.msg)
			}
		})
	}
}
