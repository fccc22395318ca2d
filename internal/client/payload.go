package client

import (
	"encoding/json"
	"fmt"
)

// payload builds the JSON body of req as vLLM's request functions do; the
// chat backend sends Request.Messages and Request.Tools when set, and the
// responses backend builds a streaming Responses API request.
func (c *Client) payload(req Request) ([]byte, error) {
	model := req.Model
	if model == "" {
		model = c.ModelName
	}
	if model == "" {
		model = c.Model
	}
	p := map[string]any{"model": model}
	generation := true
	switch c.Backend {
	case BackendOpenAI, BackendVLLM:
		p["prompt"] = req.Prompt
		p["repetition_penalty"] = 1.0
		p["max_tokens"] = req.OutputLen
		if c.Logprobs != nil {
			p["logprobs"] = *c.Logprobs
		} else {
			p["logprobs"] = nil
		}
		p["stream"] = true
		p["stream_options"] = map[string]any{"include_usage": true}
	case BackendOpenAIChat:
		if len(req.Messages) > 0 {
			p["messages"] = chatMessages(req.Messages)
		} else {
			p["messages"] = []any{map[string]any{
				"role":    "user",
				"content": []any{map[string]any{"type": "text", "text": req.Prompt}},
			}}
		}
		if len(req.Tools) > 0 {
			p["tools"] = req.Tools
		}
		// 0 is a conversation turn with no length to follow (a last user
		// message with no answer in the file): the server's own limit.
		if req.OutputLen > 0 {
			p["max_completion_tokens"] = req.OutputLen
		}
		p["stream"] = true
		p["stream_options"] = map[string]any{"include_usage": true}
	case BackendOpenAIResponses:
		if len(req.Messages) > 0 {
			p["input"] = responsesInput(req.Messages)
		} else {
			p["input"] = req.Prompt
		}
		if len(req.Tools) > 0 {
			tools, err := responsesTools(req.Tools)
			if err != nil {
				return nil, err
			}
			p["tools"] = tools
		}
		if req.OutputLen > 0 {
			p["max_output_tokens"] = req.OutputLen
		}
		p["stream"] = true
	case BackendOpenAIEmbeddings:
		if len(req.Inputs) > 0 {
			p["input"] = req.Inputs
		} else {
			p["input"] = req.Prompt
		}
		p["truncate_prompt_tokens"] = -1
		generation = false
	case BackendVLLMRerank:
		p["query"] = req.Prompt
		docs := req.Documents
		if docs == nil {
			docs = []string{}
		}
		p["documents"] = docs
		p["truncate_prompt_tokens"] = -1
		// vLLM's rerank request sends neither ignore_eos nor extra_body.
		return json.Marshal(p)
	default:
		return nil, fmt.Errorf("build payload: unknown backend %q", c.Backend)
	}
	if c.IgnoreEOS {
		p["ignore_eos"] = true
	}
	if generation {
		for k, v := range c.Sampling.params() {
			p[k] = v
		}
	}
	for k, v := range c.ExtraBody {
		p[k] = v
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("build payload: %w", err)
	}
	return b, nil
}

// chatMessage is one message in OpenAI's chat format.
type chatMessage struct {
	Role string `json:"role"`
	// Content is the text; nil (null) for an assistant message that only
	// made tool calls.
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// chatToolCall is an assistant message's tool call in OpenAI's format.
type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatMessages renders a conversation as chat "messages": text content as
// a string, an assistant's tool calls as {id, type: "function",
// function: {name, arguments}} (its content null when it said nothing),
// and a tool message with the tool_call_id it answers.
func chatMessages(msgs []Message) []chatMessage {
	out := make([]chatMessage, len(msgs))
	for i, m := range msgs {
		cm := chatMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			cm.Content = &msgs[i].Content
		}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, chatToolCall{ID: tc.ID, Type: "function", Function: chatFunction{Name: tc.Name, Arguments: tc.Arguments}})
		}
		out[i] = cm
	}
	return out
}

// responsesInput renders a conversation as a Responses API "input" list:
// messages as {role, content}, an assistant's tool calls as function_call
// items and a tool message as a function_call_output item.
func responsesInput(msgs []Message) []any {
	var out []any
	for _, m := range msgs {
		switch {
		case m.Role == "tool":
			out = append(out, map[string]any{"type": "function_call_output", "call_id": m.ToolCallID, "output": m.Content})
			continue
		case m.Content != "" || len(m.ToolCalls) == 0:
			out = append(out, map[string]any{"role": m.Role, "content": m.Content})
		}
		for _, tc := range m.ToolCalls {
			out = append(out, map[string]any{"type": "function_call", "call_id": tc.ID, "name": tc.Name, "arguments": tc.Arguments})
		}
	}
	return out
}

// responsesTools converts tool definitions in chat format ({"type":
// "function", "function": {name, description, parameters}}) to the
// Responses API's flat format ({"type": "function", name, description,
// parameters}); a definition already flat is sent as it is.
func responsesTools(raw json.RawMessage) ([]map[string]any, error) {
	var tools []map[string]any
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, fmt.Errorf("build payload: tools: want a JSON array of objects: %w", err)
	}
	for i, t := range tools {
		fn, ok := t["function"].(map[string]any)
		if !ok {
			continue
		}
		flat := map[string]any{"type": "function"}
		for k, v := range fn {
			flat[k] = v
		}
		tools[i] = flat
	}
	return tools, nil
}
