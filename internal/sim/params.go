package sim

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
)

// Params are every knob of the simulator: the served model, the
// continuous-batching engine, the latency model, output lengths and faults.
// A profile (profiles/*.yaml) is a Params written in YAML; flags and
// environment variables override single fields by the same names (see
// Knobs). Times are in the unit their name ends with. Every number but
// the seed and the rates (in [0, 1]) has a maximum, its max tag, far above
// any real server: a typing slip (step_fixed_ms 1e300) is an error, not an
// overflowed duration or an exhausted memory.
type Params struct {
	// Model is the served model name (the "model" of /v1/models).
	Model string `yaml:"model" help:"served model name"`
	// MaxModelLen is the longest prompt plus output, in tokens.
	MaxModelLen int `yaml:"max_model_len" help:"longest prompt plus output, tokens" max:"1048576"`

	// MaxNumSeqs is the most sequences that run in one step.
	MaxNumSeqs int `yaml:"max_num_seqs" help:"most sequences in one step" max:"65536"`
	// MaxNumBatchedTokens is the token budget of one step; a prompt longer
	// than what is left of it is prefilled in chunks over several steps.
	MaxNumBatchedTokens int `yaml:"max_num_batched_tokens" help:"token budget of one step (longer prompts prefill in chunks)" max:"1048576"`
	// BlockSize is the number of tokens one KV-cache block holds.
	BlockSize int `yaml:"block_size" help:"tokens per KV-cache block" max:"1024"`
	// NumKVBlocks is the size of the KV cache in blocks. When a running
	// sequence needs a block and none is free, the most recently admitted
	// sequence is preempted (its blocks freed, recomputed later).
	NumKVBlocks int `yaml:"num_kv_blocks" help:"KV-cache size in blocks (full cache preempts)" max:"1048576"`
	// EnablePrefixCaching reuses full KV blocks whose token content
	// (chained block hash) was computed before.
	EnablePrefixCaching bool `yaml:"enable_prefix_caching" help:"reuse cached full blocks of a shared prefix"`

	// StepFixedMS is the fixed cost of one engine step, in milliseconds.
	StepFixedMS float64 `yaml:"step_fixed_ms" help:"fixed cost of a step, ms" max:"60000"`
	// PrefillTokenUS is the cost of each prompt token computed in a step,
	// in microseconds.
	PrefillTokenUS float64 `yaml:"prefill_token_us" help:"cost per prompt token computed, µs" max:"1000000"`
	// SeqUS is the cost of each sequence in a step, in microseconds.
	SeqUS float64 `yaml:"seq_us" help:"cost per sequence in a step, µs" max:"1000000"`
	// ContextTokenNS is the cost of each token of context (already computed
	// tokens) attended to by the step's sequences, in nanoseconds.
	ContextTokenNS float64 `yaml:"context_token_ns" help:"cost per context token attended, ns" max:"1000000"`
	// FrontendMS is how long a request takes to reach the engine after it
	// arrives, in milliseconds: a real server's HTTP handling, prompt
	// rendering and tokenization, and the hop to its engine process. A
	// request that arrives just before a step starts misses it. It adds
	// to the TTFT but not to the engine's work; 0 = none. A calibrated
	// twin fits it (a closed loop's TTFT shows it).
	FrontendMS float64 `yaml:"frontend_ms" help:"time from a request's arrival to the engine's queue (HTTP, rendering, tokenization), ms" max:"60000"`
	// FrontendSerialMS is the part of the front end's work done one
	// request at a time (a real server's single event loop: parsing,
	// rendering, tokenization), in milliseconds: requests that arrive
	// together reach the engine this far apart, and a burst queues in
	// the front end before the engine sees it. It adds to FrontendMS;
	// 0 = none.
	FrontendSerialMS float64 `yaml:"frontend_serial_ms" help:"front-end time done one request at a time (the event loop), ms" max:"60000"`
	// Jitter is the relative standard deviation of a step's duration
	// (normal, clipped at ±3σ), drawn from the seeded generator. 0 = none.
	Jitter float64 `yaml:"jitter" help:"relative std-dev of a step's duration" max:"1"`
	// Slowdown multiplies every step's duration: 1.10 makes the server 10%
	// slower. The regression knob.
	Slowdown float64 `yaml:"slowdown" help:"multiplies every step's duration (1.10 = 10% slower)" max:"1000"`
	// DecodeSlowdown multiplies, on top of Slowdown, the duration of a
	// step that computes no prompt token: a pure decode step. 1.08 makes
	// decoding 8% slower where no prefill shares its step. A step that
	// mixes prefill and decode keeps its cost, so that a first token is
	// not slowed by it; a request that waits behind decode steps still is.
	DecodeSlowdown float64 `yaml:"decode_slowdown" help:"multiplies the duration of a step with no prompt tokens (1.08 = decode 8% slower)" max:"1000"`
	// Seed seeds jitter, output lengths, output text and fault draws.
	Seed int64 `yaml:"seed" help:"seed of jitter, lengths, text and faults"`

	// EOSMinRatio sets the output length of a request without ignore_eos:
	// uniform in [EOSMinRatio*max_tokens, max_tokens]. 1 always gives
	// max_tokens.
	EOSMinRatio float64 `yaml:"eos_min_ratio" help:"without ignore_eos, output length is uniform in [ratio*max_tokens, max_tokens]"`
	// DefaultMaxTokens is max_tokens when a chat request sets none (vLLM
	// would use the rest of the context; the simulator caps it here).
	// Completions default to 16, as in vLLM.
	DefaultMaxTokens int `yaml:"default_max_tokens" help:"max_tokens of a chat request that sets none" max:"1048576"`
	// EmbeddingDim is the length of the vectors /v1/embeddings returns.
	EmbeddingDim int `yaml:"embedding_dim" help:"length of embedding vectors" max:"65536"`

	// ToolCallRate is the probability that a chat request with tools
	// (tool_choice "auto", the default) is answered with a tool call
	// instead of content; tool_choice "required" or a named function always
	// is. 0 = never.
	ToolCallRate float64 `yaml:"tool_call_rate" help:"probability that a chat request with tools answers with a tool call"`
	// ToolCallArgTokens is the length of a generated call's one argument
	// value, in word tokens; the call's JSON around it adds a few more.
	ToolCallArgTokens int `yaml:"tool_call_arg_tokens" help:"word tokens in a generated tool call's argument value" max:"65536"`
	// ReasoningShare is the share of each chat answer's tokens streamed
	// first as reasoning (vLLM's reasoning / reasoning_content fields), the
	// rest as content or a tool call. 0 = no reasoning.
	ReasoningShare float64 `yaml:"reasoning_share" help:"share of each chat answer streamed first as reasoning"`

	// SpecDraftTokens is the draft length k of speculative decoding: each
	// decoding step verifies k draft tokens per sequence (costing what k
	// prompt tokens cost) and emits the accepted ones and one more
	// together. 0 = no speculation.
	SpecDraftTokens int `yaml:"spec_draft_tokens" help:"draft tokens per decoding step (speculative decoding), 0 = off" max:"64"`
	// SpecAcceptProb is the probability that a draft token is accepted,
	// given that the ones before it were: at every position alike.
	SpecAcceptProb float64 `yaml:"spec_accept_prob" help:"probability a draft token is accepted when those before it were"`

	// KVOffloadBlocks is the capacity, in blocks, of a slower KV tier
	// (CPU memory) that blocks evicted from the KV cache go to; a later
	// prefix hit there loads them back instead of recomputing. 0 = none.
	KVOffloadBlocks int `yaml:"kv_offload_blocks" help:"capacity of the KV offload tier in blocks (evicted blocks go there), 0 = none" max:"16777216"`
	// KVOffloadLoadUS is the time one block takes to load back from the
	// offload tier, added to the step that loads it, in microseconds.
	KVOffloadLoadUS float64 `yaml:"kv_offload_load_us" help:"cost of loading one block back from the offload tier, µs" max:"1000000"`

	// EnableRequestIDHeaders adds an X-Request-Id header to every response:
	// the request's own, or 32 new hex digits. vLLM does this only with
	// --enable-request-id-headers, so it is off by default.
	EnableRequestIDHeaders bool `yaml:"enable_request_id_headers" help:"add X-Request-Id to every response, as vLLM's --enable-request-id-headers"`

	// StartupDelayMS makes /health and the API answer 503 for this long
	// after start, like a server still loading its model.
	StartupDelayMS float64 `yaml:"startup_delay_ms" help:"answer 503 for this long after start, ms" max:"3600000"`
	// FaultRate429, FaultRate500 and FaultRate503 are the fractions of
	// generation requests answered with that HTTP status.
	FaultRate429 float64 `yaml:"fault_rate_429" help:"fraction of requests answered 429"`
	FaultRate500 float64 `yaml:"fault_rate_500" help:"fraction of requests answered 500"`
	FaultRate503 float64 `yaml:"fault_rate_503" help:"fraction of requests answered 503"`
	// FaultAbortRate is the fraction of streams cut (connection closed, no
	// [DONE]) after FaultAbortAfter chunks.
	FaultAbortRate  float64 `yaml:"fault_abort_rate" help:"fraction of streams cut"`
	FaultAbortAfter int     `yaml:"fault_abort_after" help:"chunks sent before a stream is cut" max:"1048576"`
	// FaultStallRate is the fraction of streams that pause FaultStallMS
	// milliseconds after FaultStallAfter chunks.
	FaultStallRate  float64 `yaml:"fault_stall_rate" help:"fraction of streams that stall"`
	FaultStallMS    float64 `yaml:"fault_stall_ms" help:"length of a stall, ms" max:"3600000"`
	FaultStallAfter int     `yaml:"fault_stall_after" help:"chunks sent before a stall" max:"1048576"`
	// FaultMalformedRate is the fraction of streams whose chunk number
	// FaultMalformedAfter (0-based) is not valid JSON.
	FaultMalformedRate  float64 `yaml:"fault_malformed_rate" help:"fraction of streams with a malformed chunk"`
	FaultMalformedAfter int     `yaml:"fault_malformed_after" help:"index of the malformed chunk" max:"1048576"`
	// FaultErrorRate is the fraction of streams that end after
	// FaultErrorAfter chunks with vLLM's in-stream error event.
	FaultErrorRate  float64 `yaml:"fault_error_rate" help:"fraction of streams ending in an in-stream error"`
	FaultErrorAfter int     `yaml:"fault_error_after" help:"chunks sent before the error" max:"1048576"`
}

// DefaultParams are the values of every knob a profile leaves unset: a
// small model on a CPU.
func DefaultParams() Params {
	return Params{
		Model:               "servegate/sim",
		MaxModelLen:         4096,
		MaxNumSeqs:          16,
		MaxNumBatchedTokens: 2048,
		BlockSize:           16,
		NumKVBlocks:         4096,
		EnablePrefixCaching: true,
		StepFixedMS:         10,
		PrefillTokenUS:      50,
		SeqUS:               500,
		ContextTokenNS:      0,
		Jitter:              0,
		Slowdown:            1,
		DecodeSlowdown:      1,
		Seed:                0,
		EOSMinRatio:         1,
		DefaultMaxTokens:    256,
		EmbeddingDim:        384,
		ToolCallArgTokens:   16,
		SpecAcceptProb:      0.7,
	}
}

// MaxOf returns a knob's maximum in text form, by YAML key; false for a
// knob without one.
func MaxOf(key string) (string, bool) {
	t := reflect.TypeFor[Params]()
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("yaml") == key {
			m := f.Tag.Get("max")
			return m, m != ""
		}
	}
	return "", false
}

// checkMax reports every numeric knob over its maximum.
func (p Params) checkMax() []error {
	var errs []error
	v := reflect.ValueOf(p)
	t := v.Type()
	for i := range t.NumField() {
		m := t.Field(i).Tag.Get("max")
		if m == "" {
			continue
		}
		limit, _ := strconv.ParseFloat(m, 64)
		key, f := t.Field(i).Tag.Get("yaml"), v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			if float64(f.Int()) > limit {
				errs = append(errs, fmt.Errorf("%s: must be <= %s, got %d", key, m, f.Int()))
			}
		case reflect.Float64:
			if f.Float() > limit {
				errs = append(errs, fmt.Errorf("%s: must be <= %s, got %v", key, m, f.Float()))
			}
		}
	}
	return errs
}

// Validate reports every field out of its range.
func (p Params) Validate() error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be > 0, got %d", name, v))
		}
	}
	nonneg := func(name string, v float64) {
		if v < 0 || v != v {
			errs = append(errs, fmt.Errorf("%s: must be >= 0, got %v", name, v))
		}
	}
	rate := func(name string, v float64) {
		if !(v >= 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("%s: must be in [0, 1], got %v", name, v))
		}
	}
	if p.Model == "" {
		errs = append(errs, errors.New("model: must not be empty"))
	}
	pos("max_model_len", p.MaxModelLen)
	pos("max_num_seqs", p.MaxNumSeqs)
	pos("max_num_batched_tokens", p.MaxNumBatchedTokens)
	pos("block_size", p.BlockSize)
	pos("num_kv_blocks", p.NumKVBlocks)
	pos("default_max_tokens", p.DefaultMaxTokens)
	pos("embedding_dim", p.EmbeddingDim)
	nonneg("step_fixed_ms", p.StepFixedMS)
	nonneg("prefill_token_us", p.PrefillTokenUS)
	nonneg("seq_us", p.SeqUS)
	nonneg("context_token_ns", p.ContextTokenNS)
	nonneg("frontend_ms", p.FrontendMS)
	nonneg("frontend_serial_ms", p.FrontendSerialMS)
	nonneg("jitter", p.Jitter)
	nonneg("startup_delay_ms", p.StartupDelayMS)
	nonneg("fault_stall_ms", p.FaultStallMS)
	if !(p.Slowdown > 0) {
		errs = append(errs, fmt.Errorf("slowdown: must be > 0, got %v", p.Slowdown))
	}
	if !(p.DecodeSlowdown > 0) {
		errs = append(errs, fmt.Errorf("decode_slowdown: must be > 0, got %v", p.DecodeSlowdown))
	}
	rate("eos_min_ratio", p.EOSMinRatio)
	rate("tool_call_rate", p.ToolCallRate)
	rate("reasoning_share", p.ReasoningShare)
	rate("spec_accept_prob", p.SpecAcceptProb)
	nonneg("kv_offload_load_us", p.KVOffloadLoadUS)
	if p.SpecDraftTokens < 0 {
		errs = append(errs, fmt.Errorf("spec_draft_tokens: must be >= 0, got %d", p.SpecDraftTokens))
	}
	if p.KVOffloadBlocks < 0 {
		errs = append(errs, fmt.Errorf("kv_offload_blocks: must be >= 0, got %d", p.KVOffloadBlocks))
	}
	if p.ToolCallArgTokens < 0 {
		errs = append(errs, fmt.Errorf("tool_call_arg_tokens: must be >= 0, got %d", p.ToolCallArgTokens))
	}
	for name, v := range map[string]float64{
		"fault_rate_429": p.FaultRate429, "fault_rate_500": p.FaultRate500,
		"fault_rate_503": p.FaultRate503, "fault_abort_rate": p.FaultAbortRate,
		"fault_stall_rate": p.FaultStallRate, "fault_malformed_rate": p.FaultMalformedRate,
		"fault_error_rate": p.FaultErrorRate,
	} {
		rate(name, v)
	}
	if s := p.FaultRate429 + p.FaultRate500 + p.FaultRate503; s > 1 {
		errs = append(errs, fmt.Errorf("fault_rate_429+fault_rate_500+fault_rate_503: must be <= 1, got %v", s))
	}
	for name, v := range map[string]int{
		"fault_abort_after": p.FaultAbortAfter, "fault_stall_after": p.FaultStallAfter,
		"fault_malformed_after": p.FaultMalformedAfter, "fault_error_after": p.FaultErrorAfter,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s: must be >= 0, got %d", name, v))
		}
	}
	if p.MaxNumBatchedTokens > 0 && p.MaxNumSeqs > p.MaxNumBatchedTokens {
		errs = append(errs, fmt.Errorf("max_num_seqs (%d) must be <= max_num_batched_tokens (%d)", p.MaxNumSeqs, p.MaxNumBatchedTokens))
	}
	over := p.checkMax()
	errs = append(errs, over...)
	if len(over) == 0 && p.BlockSize > 0 && p.NumKVBlocks > 0 && p.NumKVBlocks*p.BlockSize < p.MaxModelLen {
		errs = append(errs, fmt.Errorf("num_kv_blocks*block_size (%d) must hold one max_model_len (%d) sequence", p.NumKVBlocks*p.BlockSize, p.MaxModelLen))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid simulator params: %w", errors.Join(errs...))
	}
	return nil
}
