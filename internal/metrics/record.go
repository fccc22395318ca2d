// Package metrics turns per-request records into a summary whose numbers
// equal vllm bench serve's, plus servegate's extras.
package metrics

import "time"

// A FailureKind classifies why a request failed.
type FailureKind string

// Failure kinds. The empty kind is a success.
const (
	FailureNone       FailureKind = ""
	FailureHTTPStatus FailureKind = "http_status"
	FailureStream     FailureKind = "stream_error"
	FailureTimeout    FailureKind = "timeout"
	FailureTransport  FailureKind = "transport"
	FailureCanceled   FailureKind = "canceled"
	// FailureLineTooLong is a server line (an SSE line or event, or a
	// pooling response body) past the client's size cap; the client
	// closed the stream.
	FailureLineTooLong FailureKind = "line_too_long"
	// FailureExcessOutput is a server that kept generating past
	// max_tokens plus the client's slack; the client closed the stream.
	FailureExcessOutput FailureKind = "excess_output"
	// FailureBrokenToolCall is a streamed tool call whose assembled
	// arguments are not valid JSON at the end of the stream (they never
	// closed, say), or that has no function name.
	FailureBrokenToolCall FailureKind = "broken_tool_call"
	// FailureReasoningAfterContent is a stream that sent reasoning after
	// it had begun the answer (a content delta with text other than
	// white space): a broken reasoning parser.
	FailureReasoningAfterContent FailureKind = "reasoning_after_content"
	// FailureUsageMismatch is a usage block that contradicts the chunks:
	// fewer completion (output) tokens than chunks that carried output,
	// or more reasoning tokens than completion tokens, or fewer
	// reasoning tokens, when it reports any, than chunks that carried
	// reasoning. (A chunk carries at least one token in every server we
	// know; several in speculative decoding, so more tokens than chunks
	// is normal, and so is usage that reports no reasoning tokens.)
	FailureUsageMismatch FailureKind = "usage_mismatch"
	// FailureMissingCompleted is a Responses API stream that ended
	// without its terminal event (response.completed, or
	// response.incomplete), so its usage never came.
	FailureMissingCompleted FailureKind = "missing_completed"
)

// FailureKinds lists every failure kind, in the order results report them.
var FailureKinds = []FailureKind{FailureHTTPStatus, FailureStream, FailureTimeout, FailureTransport, FailureCanceled, FailureLineTooLong, FailureExcessOutput,
	FailureBrokenToolCall, FailureReasoningAfterContent, FailureUsageMismatch, FailureMissingCompleted}

// A Record is what the client measured for one request. Times are offsets
// on the monotonic clock from the start of the benchmark run.
type Record struct {
	// RequestID is the request's id (x-request-id).
	RequestID string
	// Scheduled is when the arrival schedule wanted the request sent.
	Scheduled time.Duration
	// Dispatched is when the dispatcher released the request, before it
	// waited for a concurrency slot.
	Dispatched time.Duration
	// Free is when the engine was free to send the request: its scheduled
	// time, or, when it had to wait for a concurrency slot, the moment the
	// slot it took was released, whichever is later. Start minus Free is
	// the engine's lateness: how far the load generator fell behind,
	// without the wait for a slot.
	Free time.Duration
	// Start is when the request was sent, after any concurrency wait.
	Start time.Duration
	// Unsent is true for a request the run was stopped before sending
	// (canceled or out of time while waiting for its turn or a
	// concurrency slot). Summarize leaves such records out entirely.
	Unsent bool
	// TTFT is from Start to the first chunk that carried output.
	TTFT time.Duration
	// ITL holds the gap before each later output chunk.
	ITL []time.Duration
	// Latency is from Start to the last output chunk (end-to-end latency).
	Latency time.Duration
	// PromptLen is the prompt length in tokens as the dataset counted it.
	PromptLen int
	// ServerPromptTokens is usage.prompt_tokens as the server reported it,
	// 0 when it sent none.
	ServerPromptTokens int
	// OutputTokens is the number of generated tokens (server usage when
	// present, else counted with the tokenizer).
	OutputTokens int
	// ChunkTokens holds the tokens in each output chunk (first chunk, then
	// one per ITL gap) when the server sent per-chunk usage
	// (continuous_usage_stats); nil otherwise, meaning one token a chunk.
	ChunkTokens []int
	// GeneratedText is the streamed output text.
	GeneratedText string
	// Success is true when the request completed without error.
	Success bool
	// Failure is the kind of failure; FailureNone on success.
	Failure FailureKind
	// Error is the error text of a failed request.
	Error string
	// HTTPStatus is the response status code, 0 when none arrived.
	HTTPStatus int
	// SendCut is true when the server closed the connection while the
	// request was being sent and gave no answer: the request (too big,
	// most often), not the server's readiness, is at fault.
	SendCut bool

	// FirstContent is from Start to the first chunk that carried answer
	// content (not reasoning, not a tool call); 0 when none came. TTFT
	// keeps vLLM's meaning: the first output of any kind.
	FirstContent time.Duration
	// FirstReasoning is from Start to the first chunk that carried
	// reasoning; 0 when none came.
	FirstReasoning time.Duration
	// ReasoningTokens and ContentTokens split OutputTokens: from usage
	// where the server reported the split, else counted from the chunks.
	ReasoningTokens, ContentTokens int
	// ToolCalls are the function calls the server streamed, assembled
	// from their deltas, in index order.
	ToolCalls []ToolCall
	// FinishReason is the last finish_reason (or the Responses API's
	// status) the server sent; empty when it sent none.
	FinishReason string

	// SessionID is the session the request belongs to; empty outside
	// sessions.
	SessionID string
	// Turn is the 0-based index of the user turn within its session.
	Turn int
	// ToolRound is 0 for a user turn's first request and k for the k-th
	// request of that turn that carries tool results.
	ToolRound int
	// ToolCapHit is true when the server answered with tool calls after
	// the last tool round a turn allows: the session driver sent no tool
	// results for them and went on to the next user turn.
	ToolCapHit bool
}

// A ToolCall is one function call a server streamed, assembled from its
// deltas.
type ToolCall struct {
	// ID is the call's id (tool_calls[].id, or the Responses API's call_id).
	ID string `json:"id"`
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments is the assembled JSON text of the arguments.
	Arguments string `json:"arguments"`
}

// InputLen is the prompt length vLLM reports for the request in its
// per-request input_lens: the server's prompt_tokens when it sent usage,
// else the dataset's count. For pooling requests it is the server's count
// only (0 without usage), as vLLM's pooling client does.
func (r *Record) InputLen(pooling bool) int {
	if pooling || r.ServerPromptTokens > 0 {
		return r.ServerPromptTokens
	}
	return r.PromptLen
}
