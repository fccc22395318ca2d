package sim

import (
	"encoding/json"
	"fmt"
)

// The JSON vLLM v0.13's OpenAI server sends, field for field and in its
// order. Fields vLLM always serializes as null are typed `*struct{}` or
// `any` and left nil. Read from vLLM's protocol.py and serving_*.py; no
// code was copied.

// usage is vLLM's UsageInfo.
type usage struct {
	PromptTokens        int  `json:"prompt_tokens"`
	TotalTokens         int  `json:"total_tokens"`
	CompletionTokens    int  `json:"completion_tokens"`
	PromptTokensDetails *any `json:"prompt_tokens_details"`
}

// usageShort is UsageInfo serialized with exclude_none (the final usage
// chunk) or exclude_unset (chat's continuous usage).
type usageShort struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func newUsage(prompt, completion int) usageShort {
	return usageShort{PromptTokens: prompt, TotalTokens: prompt + completion, CompletionTokens: completion}
}

func (u usageShort) full() *usage {
	return &usage{PromptTokens: u.PromptTokens, TotalTokens: u.TotalTokens, CompletionTokens: u.CompletionTokens}
}

// completionChunk is a CompletionStreamResponse dumped with
// exclude_unset=False: every field present.
type completionChunk struct {
	ID      string                  `json:"id"`
	Object  string                  `json:"object"`
	Created int64                   `json:"created"`
	Model   string                  `json:"model"`
	Choices []completionChunkChoice `json:"choices"`
	Usage   *usage                  `json:"usage"`
}

type completionChunkChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *completionLogprobs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	StopReason     *any                `json:"stop_reason"`
	PromptTokenIDs *[]int              `json:"prompt_token_ids"`
	TokenIDs       *[]int              `json:"token_ids"`
}

// usageChunk is the last chunk when stream_options.include_usage is set,
// dumped with exclude_none: no choices, the usage without its null details.
type usageChunk struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []struct{} `json:"choices"`
	Usage   usageShort `json:"usage"`
}

// chatChunk is a ChatCompletionStreamResponse dumped with exclude_unset:
// usage appears only when continuous usage stats are on.
type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usageShort       `json:"usage,omitempty"`
	// PromptTokenIDs is set (to null) on the role chunk only: vLLM sets it
	// there explicitly ("return prompt_token_ids at the first chunk ever").
	PromptTokenIDs json.RawMessage `json:"prompt_token_ids,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	// StopReason is set (to null) only on the chunk that finishes.
	StopReason json.RawMessage `json:"stop_reason,omitempty"`
	// TokenIDs is set (to null) on every chunk after the role chunk.
	TokenIDs json.RawMessage `json:"token_ids,omitempty"`
}

// chatDelta is vLLM's DeltaMessage dumped with exclude_unset: its model
// validator always sets reasoning_content (a copy of reasoning, null when
// there is none), the other fields appear when set.
type chatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []deltaToolCall `json:"tool_calls,omitempty"`
}

// deltaToolCall is vLLM's DeltaToolCall as its tool parsers stream it: the
// first delta of a call has id, type and the function's name, the later
// ones the index and a fragment of the arguments.
type deltaToolCall struct {
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Index    int           `json:"index"`
	Function deltaFunction `json:"function"`
}

type deltaFunction struct {
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

// toolCallOut is vLLM's ToolCall in a non-streamed message.
type toolCallOut struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

var jsonNull = json.RawMessage("null")

// completionResponse is a non-streamed CompletionResponse.
type completionResponse struct {
	ID                string                     `json:"id"`
	Object            string                     `json:"object"`
	Created           int64                      `json:"created"`
	Model             string                     `json:"model"`
	Choices           []completionResponseChoice `json:"choices"`
	ServiceTier       *string                    `json:"service_tier"`
	SystemFingerprint *string                    `json:"system_fingerprint"`
	Usage             *usage                     `json:"usage"`
	KVTransferParams  *any                       `json:"kv_transfer_params"`
}

type completionResponseChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *completionLogprobs `json:"logprobs"`
	FinishReason   string              `json:"finish_reason"`
	StopReason     *any                `json:"stop_reason"`
	TokenIDs       *[]int              `json:"token_ids"`
	PromptLogprobs *any                `json:"prompt_logprobs"`
	PromptTokenIDs *[]int              `json:"prompt_token_ids"`
}

// chatResponse is a non-streamed ChatCompletionResponse.
type chatResponse struct {
	ID                string               `json:"id"`
	Object            string               `json:"object"`
	Created           int64                `json:"created"`
	Model             string               `json:"model"`
	Choices           []chatResponseChoice `json:"choices"`
	ServiceTier       *string              `json:"service_tier"`
	SystemFingerprint *string              `json:"system_fingerprint"`
	Usage             *usage               `json:"usage"`
	PromptLogprobs    *any                 `json:"prompt_logprobs"`
	PromptTokenIDs    *[]int               `json:"prompt_token_ids"`
	KVTransferParams  *any                 `json:"kv_transfer_params"`
}

type chatResponseChoice struct {
	Index        int           `json:"index"`
	Message      chatMessage   `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
	StopReason   *any          `json:"stop_reason"`
	TokenIDs     *[]int        `json:"token_ids"`
}

type chatMessage struct {
	Role             string        `json:"role"`
	Content          *string       `json:"content"`
	Refusal          *any          `json:"refusal"`
	Annotations      *any          `json:"annotations"`
	Audio            *any          `json:"audio"`
	FunctionCall     *any          `json:"function_call"`
	ToolCalls        []toolCallOut `json:"tool_calls"`
	Reasoning        *string       `json:"reasoning"`
	ReasoningContent *string       `json:"reasoning_content"`
}

// errorResponse is vLLM's ErrorResponse, on 4xx/5xx and inside a stream.
type errorResponse struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// errorType is the type name vLLM gives an HTTP status.
func errorType(status int) string {
	switch status {
	case 400:
		return "BadRequestError"
	case 404:
		return "NotFoundError"
	case 429:
		return "TooManyRequestsError"
	case 501:
		return "NotImplementedError"
	case 503:
		return "ServiceUnavailableError"
	default:
		if status >= 500 {
			return "InternalServerError"
		}
		return "BadRequestError"
	}
}

func newError(status int, format string, args ...any) errorResponse {
	return errorResponse{Error: errorInfo{Message: fmt.Sprintf(format, args...), Type: errorType(status), Code: status}}
}

// invalid is vLLM's answer to a request its pydantic model rejects (a
// validator's ValueError): status 400, type "Bad Request". vLLM's message is
// pydantic's whole error dump, which repeats the request body as a Python
// repr and names the server's source file; the simulator sends only the
// validator's sentence, which that dump contains.
func invalid(msg string) error {
	e := newError(400, "%s", msg)
	e.Error.Type = "Bad Request"
	return &badRequest{e}
}

// modelNotFound is vLLM's answer to a request for another model.
func modelNotFound(model string) errorResponse {
	return newError(404, "The model `%s` does not exist.", model)
}
