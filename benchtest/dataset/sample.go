// Package dataset turns a dataset spec into the samples a benchmark sends.
package dataset

import "time"

// A Sample is one request to send: the prompt, its token count as the
// dataset counted it, the number of output tokens to ask for, and an id.
type Sample struct {
	// Prompt is the text sent (for chat, the user message).
	Prompt string
	// PromptLen is the prompt's length in tokens.
	PromptLen int
	// OutputLen is the expected output length in tokens (max_tokens).
	OutputLen int
	// RequestID is sent as x-request-id and keys the per-request records.
	RequestID string
	// Arrival is the offset from the start of the run at which a trace
	// replays this request; meaningful only when HasArrival is set.
	Arrival time.Duration
	// HasArrival says the dataset carries arrival times (trace replay).
	HasArrival bool
	// Documents are the documents to score against Prompt (the query) for
	// the vllm-rerank backend; nil for every other dataset.
	Documents []string
	// Inputs, when set, are the texts of one batched embeddings request
	// (random with BatchSize > 1, random-rerank with NoReranker); Prompt is
	// then empty.
	Inputs []string
}
