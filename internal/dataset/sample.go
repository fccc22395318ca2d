// Package dataset turns a dataset spec into the samples a benchmark sends:
// the datasets of vllm bench serve (v0.13) that work offline — random,
// random-rerank, sharegpt, custom, spec_bench, sonnet, burstgpt,
// prefix_repetition and txt-slices — with vLLM's defaults, filters and
// errors.
//
// Load is the one entry point: a plain Spec in, []Sample out. For the same
// tokenizer, chat template and seed, the samples are the ones vLLM builds,
// byte for byte (see Spec). Bad input files give one error naming the file,
// the line and what is wrong (a *FileError in the chain).
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
	// Arrival is the offset from the trace's first request at which this
	// request was made, in trace time (the engine's TraceSpeed scales it
	// when replaying); meaningful only when HasArrival is set.
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
