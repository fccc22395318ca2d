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
)

// A Record is what the client measured for one request. Times are offsets
// on the monotonic clock from the start of the benchmark run.
type Record struct {
	// RequestID is the request's id (x-request-id).
	RequestID string
	// Scheduled is when the arrival schedule wanted the request sent.
	Scheduled time.Duration
	// Start is when the request was sent, after any concurrency wait.
	Start time.Duration
	// TTFT is from Start to the first chunk that carried output.
	TTFT time.Duration
	// ITL holds the gap before each later output chunk.
	ITL []time.Duration
	// Latency is from Start to the last output chunk (end-to-end latency).
	Latency time.Duration
	// PromptLen is the prompt length in tokens.
	PromptLen int
	// OutputTokens is the number of generated tokens (server usage when
	// present, else counted with the tokenizer).
	OutputTokens int
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
}
