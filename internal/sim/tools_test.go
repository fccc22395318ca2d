package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// weatherTools is a tools array with two functions.
var weatherTools = []any{
	map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}},
	map[string]any{"type": "function", "function": map[string]any{"name": "search_web",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}}},
}

// chatStream is what a chat stream carried, assembled per choice 0.
type chatStream struct {
	content, reasoning string
	calls              []toolCallOut // assembled by index
	firstCall          map[string]any
	finish             string
	completionTokens   int
	order              []string // "reasoning", "content", "tool" per event, in order
}

// readChat assembles a chat stream the way a client must: tool-call deltas
// by index, the first one carrying id, type and name.
func readChat(tb testing.TB, r streamResult) chatStream {
	tb.Helper()
	require.NoError(tb, r.err)
	require.Equal(tb, http.StatusOK, r.status, "%s", r.body)
	require.True(tb, r.done(), "stream without [DONE]")
	var out chatStream
	for _, e := range r.events[:len(r.events)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content          *string          `json:"content"`
					Reasoning        *string          `json:"reasoning"`
					ReasoningContent *string          `json:"reasoning_content"`
					ToolCalls        []map[string]any `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		require.NoError(tb, json.Unmarshal([]byte(e.data), &c), e.data)
		if c.Usage != nil {
			out.completionTokens = c.Usage.CompletionTokens
		}
		if len(c.Choices) == 0 {
			continue
		}
		d := c.Choices[0].Delta
		if d.Reasoning != nil {
			require.NotNil(tb, d.ReasoningContent, "reasoning without reasoning_content: %s", e.data)
			assert.Equal(tb, *d.Reasoning, *d.ReasoningContent)
			out.reasoning += *d.Reasoning
			out.order = append(out.order, "reasoning")
		}
		if d.Content != nil && *d.Content != "" {
			out.content += *d.Content
			out.order = append(out.order, "content")
		}
		for _, tc := range d.ToolCalls {
			idx := int(tc["index"].(float64))
			for len(out.calls) <= idx {
				out.calls = append(out.calls, toolCallOut{})
			}
			fn, _ := tc["function"].(map[string]any)
			if id, ok := tc["id"].(string); ok {
				require.Nil(tb, out.firstCall, "a second delta with an id: %s", e.data)
				out.firstCall = tc
				out.calls[idx].ID, out.calls[idx].Type = id, tc["type"].(string)
				out.calls[idx].Function.Name = fn["name"].(string)
			}
			if a, ok := fn["arguments"].(string); ok {
				require.NotEmpty(tb, out.calls[idx].ID, "arguments before the name: %s", e.data)
				out.calls[idx].Function.Arguments += a
			}
			out.order = append(out.order, "tool")
		}
		if f := c.Choices[0].FinishReason; f != nil {
			out.finish = *f
		}
	}
	return out
}

func toolParams() Params {
	p := testParams()
	p.ToolCallRate, p.ToolCallArgTokens = 1, 12
	return p
}

func chatReq(msgs []any, extra map[string]any) map[string]any {
	b := map[string]any{"messages": msgs, "max_tokens": 64, "ignore_eos": true, "stream": true,
		"stream_options": map[string]any{"include_usage": true}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func TestToolCallStream(t *testing.T) {
	p := toolParams()
	_, url := start(t, Config{Params: &p})
	ctx := context.Background()
	body := chatReq([]any{user("What is the weather in Paris?")}, map[string]any{"tools": weatherTools, "seed": 7})
	a := readChat(t, post(ctx, url+"/v1/chat/completions", body, nil))
	require.Len(t, a.calls, 1)
	assert.Equal(t, "tool_calls", a.finish)
	assert.Empty(t, a.content)
	c := a.calls[0]
	assert.Regexp(t, `^chatcmpl-tool-[0-9a-f]{32}$`, c.ID)
	assert.Equal(t, "function", c.Type)
	assert.Contains(t, []string{"get_weather", "search_web"}, c.Function.Name)
	// The first delta is vLLM's: id, type, index and the name, no arguments.
	assert.Equal(t, map[string]any{"id": c.ID, "type": "function", "index": 0.0,
		"function": map[string]any{"name": c.Function.Name}}, a.firstCall)
	var args map[string]string
	require.NoError(t, json.Unmarshal([]byte(c.Function.Arguments), &args), c.Function.Arguments)
	require.Len(t, args, 1)
	for k, v := range args {
		assert.Equal(t, map[string]string{"get_weather": "city", "search_web": "query"}[c.Function.Name], k)
		assert.Len(t, strings.Fields(v), p.ToolCallArgTokens, "argument value %q", v)
	}
	// Every generated token is counted, the call's JSON around the value too.
	assert.Greater(t, a.completionTokens, p.ToolCallArgTokens)
	assert.Less(t, a.completionTokens, 64, "the call stops before max_tokens")

	// The same seed gives the same call.
	b := readChat(t, post(ctx, url+"/v1/chat/completions", body, nil))
	assert.Equal(t, a.calls, b.calls)
	assert.Equal(t, a.completionTokens, b.completionTokens)
}

func TestToolChoice(t *testing.T) {
	p := toolParams()
	p.ToolCallRate = 0
	_, url := start(t, Config{Params: &p})
	ctx := context.Background()
	msgs := []any{user("hello")}
	named := map[string]any{"type": "function", "function": map[string]any{"name": "search_web"}}
	for _, c := range []struct {
		name   string
		extra  map[string]any
		status int
		call   string // "" for content, "*" for any
		msg    string
	}{
		{"auto at rate 0", map[string]any{"tools": weatherTools}, 200, "", ""},
		{"required", map[string]any{"tools": weatherTools, "tool_choice": "required"}, 200, "*", ""},
		{"named", map[string]any{"tools": weatherTools, "tool_choice": named}, 200, "search_web", ""},
		{"none", map[string]any{"tools": weatherTools, "tool_choice": "none"}, 200, "", ""},
		{"choice without tools", map[string]any{"tool_choice": "required"}, 400, "", "When using `tool_choice`, `tools` must be set."},
		{"unknown choice", map[string]any{"tools": weatherTools, "tool_choice": "sometimes"}, 400, "", "Invalid value for `tool_choice`"},
		{"unknown named", map[string]any{"tools": weatherTools, "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}}, 400, "", "does not match any of the specified `tools`"},
		{"tool without name", map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{}}}}, 400, "", "tools[0].function.name"},
		{"tools not a list", map[string]any{"tools": "get_weather"}, 400, "", "tools: Input should be a valid list"},
		{"tool_choice a number", map[string]any{"tools": weatherTools, "tool_choice": 3}, 400, "", "tool_choice: Input should be a string or a named function"},
		{"required on no tools", map[string]any{"tools": []any{}, "tool_choice": "required"}, 200, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := post(ctx, url+"/v1/chat/completions", chatReq(msgs, c.extra), nil)
			require.Equal(t, c.status, r.status, "%s", r.body)
			if c.status != 200 {
				assert.Contains(t, string(r.body), c.msg)
				return
			}
			a := readChat(t, r)
			switch c.call {
			case "":
				assert.Empty(t, a.calls)
				assert.NotEmpty(t, a.content)
				assert.Equal(t, "length", a.finish)
			case "*":
				require.Len(t, a.calls, 1)
			default:
				require.Len(t, a.calls, 1)
				assert.Equal(t, c.call, a.calls[0].Function.Name)
			}
		})
	}
}

func TestToolCallNotStreamed(t *testing.T) {
	p := toolParams()
	_, url := start(t, Config{Params: &p})
	body := chatReq([]any{user("weather?")}, map[string]any{"tools": weatherTools, "stream": false, "seed": 7})
	delete(body, "stream_options")
	r := post(context.Background(), url+"/v1/chat/completions", body, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	var resp struct {
		Choices []struct {
			Message struct {
				Content   *string       `json:"content"`
				ToolCalls []toolCallOut `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(r.body, &resp))
	m := resp.Choices[0].Message
	assert.Nil(t, m.Content)
	assert.Equal(t, "tool_calls", resp.Choices[0].FinishReason)
	require.Len(t, m.ToolCalls, 1)
	assert.True(t, json.Valid([]byte(m.ToolCalls[0].Function.Arguments)), m.ToolCalls[0].Function.Arguments)

	// The streamed call of the same seed is the same call.
	s := readChat(t, post(context.Background(), url+"/v1/chat/completions",
		chatReq([]any{user("weather?")}, map[string]any{"tools": weatherTools, "seed": 7}), nil))
	assert.Equal(t, m.ToolCalls, s.calls)
}

// TestHistoryHitsPrefixCache sends a conversation the way a multi-turn
// client does, with the answers as they were streamed: each later turn's
// prompt extends the earlier prompt and answer, so the prefix cache serves
// the history's blocks, the answer's included.
func TestHistoryHitsPrefixCache(t *testing.T) {
	p := toolParams()
	p.ToolCallRate = 0.5
	srv, url := start(t, Config{Params: &p})
	ctx := context.Background()
	msgs := []any{map[string]any{"role": "system", "content": "You are terse."}, user("Plan a trip to Lyon.")}
	prevPrompt, prevOut := 0, 0
	sawCall, sawContent := false, false
	for turn := range 6 {
		id := "hist-" + string(rune('a'+turn))
		r := post(ctx, url+"/v1/chat/completions", chatReq(msgs, map[string]any{"tools": weatherTools, "max_tokens": 24}),
			map[string]string{"X-Request-Id": id})
		a := readChat(t, r)
		tr, ok := srv.Truth(id)
		require.True(t, ok)
		if turn > 0 {
			// Every full block of the last prompt and of its answer but its
			// last token (whose KV is never computed) is found.
			want := (prevPrompt + prevOut - 1) / p.BlockSize * p.BlockSize
			assert.GreaterOrEqual(t, tr.CachedTokens, want, "turn %d: cached %d of %d prompt tokens", turn, tr.CachedTokens, tr.PromptTokens)
			assert.Greater(t, tr.PromptTokens, prevPrompt+prevOut, "turn %d", turn)
		}
		prevPrompt, prevOut = tr.PromptTokens, tr.OutputTokens
		if len(a.calls) > 0 {
			sawCall = true
			c := a.calls[0]
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
					"id": c.ID, "type": "function", "function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments}}}},
				map[string]any{"role": "tool", "tool_call_id": c.ID, "content": `{"temperature": 21}`})
			continue
		}
		sawContent = true
		msgs = append(msgs, map[string]any{"role": "assistant", "content": a.content}, user("And then?"))
	}
	assert.True(t, sawCall && sawContent, "the conversation should have both a tool call and content (call %v, content %v)", sawCall, sawContent)
}

func TestHistoryMessagesRender(t *testing.T) {
	p := testParams()
	_, url := start(t, Config{Params: &p})
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		msgs   []any
		status int
	}{
		{"assistant null content with calls", []any{user("x"), map[string]any{"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": `{"a": 1}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "content": "42"}}, 200},
		{"arguments as an object", []any{user("x"), map[string]any{"role": "assistant",
			"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": map[string]any{"a": 1}}}}}}, 200},
		{"arguments a number", []any{user("x"), map[string]any{"role": "assistant",
			"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": 3}}}}}, 400},
		{"user content missing", []any{map[string]any{"role": "user"}}, 400},
		{"tool_calls not a list", []any{user("x"), map[string]any{"role": "assistant", "tool_calls": "f"}}, 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := post(ctx, url+"/v1/chat/completions", map[string]any{"messages": c.msgs, "max_tokens": 2}, nil)
			assert.Equal(t, c.status, r.status, "%s", r.body)
		})
	}
}

func TestReasoningStream(t *testing.T) {
	p := toolParams()
	p.ReasoningShare = 0.25
	srv, url := start(t, Config{Params: &p})
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		extra map[string]any
		call  bool
	}{
		{"content", nil, false},
		{"tool call", map[string]any{"tools": weatherTools}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "reason-" + strings.ReplaceAll(c.name, " ", "-")
			a := readChat(t, post(ctx, url+"/v1/chat/completions", chatReq([]any{user("think first")}, c.extra),
				map[string]string{"X-Request-Id": id}))
			tr, ok := srv.Truth(id)
			require.True(t, ok)
			// A quarter of the 64 tokens (content) or of the drawn length
			// (tool call) is reasoning, streamed first, in whole words.
			assert.Equal(t, 16, tr.ReasoningTokens)
			assert.Len(t, strings.Fields(a.reasoning), 16)
			require.NotEmpty(t, a.order)
			assert.Equal(t, "reasoning", a.order[0])
			seenAnswer := false
			for _, k := range a.order {
				if k != "reasoning" {
					seenAnswer = true
				} else {
					assert.False(t, seenAnswer, "reasoning after the answer: %v", a.order)
				}
			}
			if c.call {
				require.Len(t, a.calls, 1)
				assert.Equal(t, 1, tr.ToolCalls)
				assert.Equal(t, "tool_calls", a.finish)
				assert.True(t, json.Valid([]byte(a.calls[0].Function.Arguments)))
				return
			}
			assert.Len(t, strings.Fields(a.content), 48)
			assert.Equal(t, 64, a.completionTokens, "usage counts reasoning and content")
		})
	}
}

func TestReasoningNotStreamed(t *testing.T) {
	p := testParams()
	p.ReasoningShare = 0.5
	_, url := start(t, Config{Params: &p})
	r := post(context.Background(), url+"/v1/chat/completions",
		map[string]any{"messages": []any{user("x")}, "max_tokens": 10, "ignore_eos": true}, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	var resp struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				Reasoning        string `json:"reasoning"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
		Usage map[string]any `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(r.body, &resp))
	m := resp.Choices[0].Message
	assert.Len(t, strings.Fields(m.Reasoning), 5)
	assert.Equal(t, m.Reasoning, m.ReasoningContent)
	assert.Len(t, strings.Fields(m.Content), 5)
	// vLLM 0.13's UsageInfo has no completion_tokens_details: reasoning
	// tokens are not in chat usage.
	assert.NotContains(t, resp.Usage, "completion_tokens_details")
}

// TestToolCallLongNamesRenderBack: a tool name or argument key longer
// than the simulator takes is cut on a character boundary, so the call is
// valid UTF-8 and its text (the tokens generated) is what the chat
// template renders back when the client resends the call.
func TestToolCallLongNamesRenderBack(t *testing.T) {
	p := toolParams()
	srv, _ := start(t, Config{Params: &p})
	name := "a" + strings.Repeat("é", 200) // the 256th byte is inside an é
	key := "b" + strings.Repeat("ü", 200)
	raw, err := json.Marshal([]any{map[string]any{"type": "function", "function": map[string]any{"name": name,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{key: map[string]any{"type": "string"}}}}}})
	require.NoError(t, err)
	ts, err := parseToolChoice(raw, nil)
	require.NoError(t, err)
	call := srv.drawTool(ts, 1, 64)
	require.NotNil(t, call)
	assert.True(t, utf8.ValidString(call.name), "name %q", call.name)
	assert.True(t, strings.HasPrefix(name, call.name))
	var got string // the name as a client reads it and sends it back
	require.NoError(t, json.Unmarshal(marshal(call.name), &got))
	assert.Equal(t, call.name, got)
	assert.True(t, json.Valid([]byte(call.args)), call.args)
	var args map[string]string
	require.NoError(t, json.Unmarshal([]byte(call.args), &args))
	for k := range args {
		assert.True(t, strings.HasPrefix(key, k), "key %q", k)
	}
	assert.Equal(t, callText(call.name, call.args), srv.tk.Decode(call.script, false),
		"the generated call is the text the template renders for it")
	assert.Equal(t, callText(call.name, call.args), call.cutText(len(call.script)), "a call's text, piece by piece")
}

// TestToolCallCutShortIsItsText: a tool call that max_tokens cuts short
// is not parsed, so the answer is the text the model got to, as vLLM's
// tool parsers return an unparsable call: the call's head (name and the
// "arguments" key) included, not only the part of its arguments.
func TestToolCallCutShortIsItsText(t *testing.T) {
	p := toolParams()
	_, url := start(t, Config{Params: &p})
	named := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	body := chatReq([]any{user("weather?")}, map[string]any{"tools": weatherTools, "tool_choice": named, "stream": false, "max_tokens": 20})
	delete(body, "stream_options")
	r := post(context.Background(), url+"/v1/chat/completions", body, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	var resp struct {
		Choices []struct {
			Message struct {
				Content   *string       `json:"content"`
				ToolCalls []toolCallOut `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(r.body, &resp))
	require.Equal(t, "length", resp.Choices[0].FinishReason)
	require.Equal(t, 20, resp.Usage.CompletionTokens)
	m := resp.Choices[0].Message
	assert.Empty(t, m.ToolCalls)
	require.NotNil(t, m.Content)
	assert.True(t, strings.HasPrefix(*m.Content, `{"name": "get_weather", "arguments": {"city": "`), "content %q", *m.Content)
}
