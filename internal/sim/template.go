package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// chatInMessage is one message of a chat request: a system, user or
// assistant turn, an assistant turn that called tools (content may be
// null), or a tool result.
type chatInMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []toolCallIn    `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// toolCallIn is a tool call an assistant message of the history made.
type toolCallIn struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON text in a string, as OpenAI sends it; an
		// object is taken as its compact text.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// The chat template is Llama-3's layout: each message is a header with its
// role, two newlines, its text and <|eot_id|>; the prompt ends with the
// assistant header. Tools are a system block in front of the messages
// (their JSON, compacted); an assistant message that called tools has, after
// its content, each call as {"name": NAME, "arguments": ARGS}, the same text
// the simulator generates for a call (see toolScript); a tool result is an
// "ipython" message, as Llama 3.1 names it. The rendering is a pure
// function of the request, so a later turn that resends the history with
// the answers as they were streamed renders to the earlier prompt, its
// answer and the new messages: its prompt tokens extend the earlier turn's
// prompt and answer, and the prefix cache finds their blocks.
const (
	headerFmt     = "<|start_header_id|>%s<|end_header_id|>\n\n"
	endOfTurn     = "<|eot_id|>"
	assistantHead = "<|start_header_id|>assistant<|end_header_id|>\n\n"
	toolsPreamble = "You can call these functions. To call one, answer with {\"name\": function name, \"arguments\": its arguments as JSON}.\n"
)

// chatPrompt renders the messages (and tools) with the chat template and
// tokenizes the result, ending with the assistant header.
func (s *Server) chatPrompt(msgs []chatInMessage, tools json.RawMessage) ([]int, error) {
	if len(msgs) == 0 {
		return nil, bad(http.StatusBadRequest, "messages must not be empty")
	}
	var b strings.Builder
	if len(tools) > 0 && string(tools) != "null" && string(tools) != "[]" {
		var c bytes.Buffer
		if err := json.Compact(&c, tools); err != nil {
			return nil, invalid("tools: Input should be a valid list")
		}
		b.WriteString(strings.Replace(headerFmt, "%s", "system", 1))
		b.WriteString(toolsPreamble)
		b.Write(c.Bytes())
		b.WriteString(endOfTurn)
	}
	for i, m := range msgs {
		text, err := messageText(i, m)
		if err != nil {
			return nil, err
		}
		role := m.Role
		if role == "tool" {
			role = "ipython"
		}
		b.WriteString(strings.Replace(headerFmt, "%s", role, 1))
		b.WriteString(text)
		for k, tc := range m.ToolCalls {
			args, err := argumentsText(tc.Function.Arguments)
			if err != nil {
				return nil, invalid("messages[" + strconv.Itoa(i) + "].tool_calls[" + strconv.Itoa(k) + "].function.arguments: Input should be a valid string")
			}
			b.WriteString(callText(tc.Function.Name, args))
		}
		b.WriteString(endOfTurn)
	}
	b.WriteString(assistantHead)
	return s.tk.Encode(b.String(), true), nil
}

// messageText is a message's content as text: a string, the texts of a
// list of parts, or "" when it is null or absent on an assistant message
// with tool calls.
func messageText(i int, m chatInMessage) (string, error) {
	if (len(m.Content) == 0 || string(m.Content) == "null") && (len(m.ToolCalls) > 0 || m.Role == "assistant" && len(m.Content) > 0) {
		return "", nil
	}
	var text string
	if err := json.Unmarshal(m.Content, &text); err == nil {
		return text, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", bad(http.StatusBadRequest, "messages[%d].content must be a string or a list of parts", i)
	}
	for _, p := range parts {
		text += p.Text
	}
	return text, nil
}

// argumentsText is a history tool call's arguments as JSON text.
func argumentsText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return "", err
	}
	if c.Bytes()[0] != '{' {
		return "", errors.New("not a JSON object or string")
	}
	return c.String(), nil
}

// callText is a tool call as the template renders it and the simulator
// generates it.
func callText(name, args string) string {
	return `{"name": ` + string(marshal(name)) + `, "arguments": ` + args + `}`
}
