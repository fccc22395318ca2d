package sim

// richChunk returns the SSE event of a chat choice that streams reasoning
// or a tool call (see choice.rich), for its tokens from index from on, ids;
// nil when the tokens say nothing yet (a tool call's name is not complete)
// and the choice has not finished. As in vLLM's reasoning parsers, a chunk
// whose tokens cross from reasoning to the answer carries both. finish is
// the engine's reason ("" while running); a finished tool call reports
// "tool_calls", as vLLM's serving layer does.
func (s *Server) richChunk(j *job, index int, c *choice, from int, ids []int, finish string, sent int) []byte {
	d := s.richDelta(index, c, from, ids)
	if d == nil {
		if finish == "" {
			return nil
		}
		d = &chatDelta{}
	}
	if finish == "stop" && c.tool != nil {
		finish = "tool_calls"
	}
	var fr *string
	if finish != "" {
		fr = &finish
	}
	ch := chatChunkChoice{Index: index, Delta: *d, FinishReason: fr, TokenIDs: jsonNull}
	if fr != nil {
		ch.StopReason = jsonNull
	}
	out := chatChunk{ID: j.id, Object: "chat.completion.chunk", Created: j.created, Model: s.p.Model,
		Choices: []chatChunkChoice{ch}}
	if j.continuous {
		u := newUsage(len(j.prompt), sent)
		out.Usage = &u
	}
	b := append([]byte("data: "), marshal(out)...)
	return append(b, "\n\n"...)
}

// richDelta is the delta of a choice's tokens from index from on; nil when
// they carry nothing.
func (s *Server) richDelta(index int, c *choice, from int, ids []int) *chatDelta {
	var d chatDelta
	any := false
	split := min(max(c.reasoning-from, 0), len(ids))
	if split > 0 {
		r := s.vocab.text(ids[:split])
		d.Reasoning, d.ReasoningContent = &r, &r
		any = true
	}
	rest := ids[split:]
	if len(rest) == 0 {
		return &d
	}
	if c.tool == nil {
		t := s.vocab.text(rest)
		d.Content = &t
		return &d
	}
	start := from + split - c.reasoning // index in the script
	var tc deltaToolCall
	args, named := "", false
	for i := start; i < start+len(rest) && i < len(c.tool.script); i++ {
		if i == c.tool.nameAt {
			named = true
		}
		args += c.tool.argAt[i]
	}
	if named {
		tc.ID, tc.Type, tc.Function.Name = c.tool.id, "function", c.tool.name
	}
	if args != "" {
		tc.Function.Arguments = &args
	}
	if named || args != "" {
		d.ToolCalls = []deltaToolCall{tc}
		any = true
	}
	if !any {
		return nil
	}
	return &d
}

// chatMessageOf is a choice's whole answer, out, as a non-streamed
// message: its reasoning, then its content or its tool call (content null).
// A tool call cut short by max_tokens is returned as the text it got to,
// as vLLM's parsers return an unparsable call.
func (s *Server) chatMessageOf(c *choice, out []int) chatMessage {
	m := chatMessage{Role: "assistant", ToolCalls: []toolCallOut{}}
	split := min(c.reasoning, len(out))
	if split > 0 {
		r := s.vocab.text(out[:split])
		m.Reasoning, m.ReasoningContent = &r, &r
	}
	rest := out[split:]
	if c.tool != nil && len(rest) == len(c.tool.script) {
		m.ToolCalls = append(m.ToolCalls, toolCallOut{ID: c.tool.id, Type: "function",
			Function: functionCall{Name: c.tool.name, Arguments: c.tool.args}})
		return m
	}
	var t string
	if c.tool != nil {
		t = c.tool.cutText(len(rest))
	} else {
		t = s.vocab.text(rest)
	}
	m.Content = &t
	return m
}
