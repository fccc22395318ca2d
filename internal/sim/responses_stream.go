package sim

import (
	"fmt"
	"net/http"
)

// The objects of the Responses API as vLLM v0.13 dumps them
// (model_dump_json of the openai SDK's types and vLLM's ResponsesResponse),
// fields in their declared order.

type responseObject struct {
	ID                 string         `json:"id"`
	CreatedAt          int64          `json:"created_at"`
	IncompleteDetails  *any           `json:"incomplete_details"`
	Instructions       *string        `json:"instructions"`
	Metadata           *any           `json:"metadata"`
	Model              string         `json:"model"`
	Object             string         `json:"object"`
	Output             []any          `json:"output"`
	ParallelToolCalls  bool           `json:"parallel_tool_calls"`
	Temperature        pyFloat        `json:"temperature"`
	ToolChoice         any            `json:"tool_choice"`
	Tools              []any          `json:"tools"`
	TopP               pyFloat        `json:"top_p"`
	Background         bool           `json:"background"`
	MaxOutputTokens    int            `json:"max_output_tokens"`
	MaxToolCalls       *int           `json:"max_tool_calls"`
	PreviousResponseID *string        `json:"previous_response_id"`
	Prompt             *any           `json:"prompt"`
	Reasoning          *any           `json:"reasoning"`
	ServiceTier        string         `json:"service_tier"`
	Status             string         `json:"status"`
	Text               *any           `json:"text"`
	TopLogprobs        int            `json:"top_logprobs"`
	Truncation         string         `json:"truncation"`
	Usage              *responseUsage `json:"usage"`
	User               *string        `json:"user"`
	InputMessages      *any           `json:"input_messages"`
	OutputMessages     *any           `json:"output_messages"`
}

// responseUsage is vLLM's ResponseUsage. reasoning_tokens is 0: vLLM
// 0.13's SimpleContext (every model but gpt-oss) does not count them.
type responseUsage struct {
	InputTokens         int                `json:"input_tokens"`
	InputTokensDetails  inputTokenDetails  `json:"input_tokens_details"`
	OutputTokens        int                `json:"output_tokens"`
	OutputTokensDetails outputTokenDetails `json:"output_tokens_details"`
	TotalTokens         int                `json:"total_tokens"`
}

type inputTokenDetails struct {
	CachedTokens        int   `json:"cached_tokens"`
	InputTokensPerTurn  []int `json:"input_tokens_per_turn"`
	CachedTokensPerTurn []int `json:"cached_tokens_per_turn"`
}

type outputTokenDetails struct {
	ReasoningTokens         int   `json:"reasoning_tokens"`
	ToolOutputTokens        int   `json:"tool_output_tokens"`
	OutputTokensPerTurn     []int `json:"output_tokens_per_turn"`
	ToolOutputTokensPerTurn []int `json:"tool_output_tokens_per_turn"`
}

type outputText struct {
	Annotations []any  `json:"annotations"`
	Text        string `json:"text"`
	Type        string `json:"type"`
	Logprobs    *[]any `json:"logprobs"`
}

type outputMessage struct {
	ID      string       `json:"id"`
	Content []outputText `json:"content"`
	Role    string       `json:"role"`
	Status  string       `json:"status"`
	Type    string       `json:"type"`
	// Summary is an extra field vLLM passes when it closes a streamed
	// message; the SDK's models keep extra fields.
	Summary *[]any `json:"summary,omitempty"`
}

type reasoningText struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

type reasoningItem struct {
	ID               string          `json:"id"`
	Summary          []any           `json:"summary"`
	Type             string          `json:"type"`
	Content          []reasoningText `json:"content"`
	EncryptedContent *string         `json:"encrypted_content"`
	Status           *string         `json:"status"`
}

type functionCallItem struct {
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Type      string `json:"type"`
	ID        string `json:"id"`
	Status    string `json:"status"`
}

// responseObject builds the response of a finished (or starting, ids nil
// and status "in_progress") Responses request.
func (s *Server) responseObject(rj *responsesJob, sq *seq, ids []int, reason, status string) responseObject {
	temp, topP := 1.0, 1.0
	if rj.req.Temperature != nil {
		temp = *rj.req.Temperature
	}
	if rj.req.TopP != nil {
		topP = *rj.req.TopP
	}
	tools := []any{}
	for _, t := range rj.req.Tools {
		tools = append(tools, t)
	}
	o := responseObject{ID: rj.id, CreatedAt: rj.created, Instructions: rj.req.Instructions, Model: s.p.Model,
		Object: "response", Output: []any{}, ParallelToolCalls: true, Temperature: pyFloat(temp), ToolChoice: "auto",
		Tools: tools, TopP: pyFloat(topP), MaxOutputTokens: rj.maxTokens, ServiceTier: "auto", Status: status,
		Truncation: "disabled"}
	if status == "in_progress" {
		return o
	}
	c := &rj.choices[0]
	split := min(c.reasoning, len(ids))
	if split > 0 {
		o.Output = append(o.Output, reasoningItem{ID: "rs_" + s.uuidHex(), Summary: []any{}, Type: "reasoning",
			Content: []reasoningText{{Text: s.vocab.text(ids[:split]), Type: "reasoning_text"}}})
	}
	rest := ids[split:]
	switch {
	case c.tool != nil && len(rest) == len(c.tool.script):
		o.Output = append(o.Output, functionCallItem{Arguments: c.tool.args, CallID: callID(c.tool), Name: c.tool.name,
			Type: "function_call", ID: "fc_" + s.uuidHex(), Status: "completed"})
	case len(rest) > 0:
		text := ""
		if c.tool != nil {
			text = c.tool.cutText(len(rest))
		} else {
			text = s.vocab.text(rest)
		}
		o.Output = append(o.Output, outputMessage{ID: "msg_" + s.uuidHex(), Role: "assistant", Status: "completed", Type: "message",
			Content: []outputText{{Annotations: []any{}, Text: text, Type: "output_text"}}})
	}
	sq.mu.Lock()
	cached := sq.truth.CachedTokens
	sq.mu.Unlock()
	o.Usage = &responseUsage{InputTokens: len(rj.prompt), OutputTokens: len(ids), TotalTokens: len(rj.prompt) + len(ids),
		InputTokensDetails:  inputTokenDetails{CachedTokens: cached, InputTokensPerTurn: []int{}, CachedTokensPerTurn: []int{}},
		OutputTokensDetails: outputTokenDetails{OutputTokensPerTurn: []int{}, ToolOutputTokensPerTurn: []int{}}}
	return o
}

// callID is a function call's call_id in the Responses API: the chat
// tool call id's hex with the "call_" prefix.
func callID(t *toolPlan) string { return "call_" + t.id[len("chatcmpl-tool-"):] }

// uuidString is 36 characters like Python's str(uuid.uuid4()), which vLLM
// names streamed items with.
func (s *Server) uuidString() string {
	h := s.uuidHex()
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// responseStream is the state of one streamed Responses request: vLLM's
// counters (its content index grows with every delta, as vLLM's does) and
// the text so far of the item being streamed.
type responseStream struct {
	s       *Server
	w       http.ResponseWriter
	seqNo   int
	outIdx  int
	content int
	itemID  string
	phase   string // "", "reasoning", "message" or "call"
	text    string // the current item's text (reasoning, message or arguments)
	wrote   bool   // a delta event went out since the last flush
}

// emit writes one event; its fields go out in alphabetical order, the
// order of the openai SDK types vLLM dumps.
func (rs *responseStream) emit(typ string, fields map[string]any) {
	fields["sequence_number"] = rs.seqNo
	fields["type"] = typ
	rs.seqNo++
	b := append([]byte("event: "+typ+"\ndata: "), marshal(fields)...)
	rs.w.Write(append(b, "\n\n"...))
}

// streamResponse writes a Responses request's events as vLLM's
// _process_simple_streaming_events does: response.created and
// response.in_progress, then per engine output the deltas of the item
// being streamed (reasoning, then a message or a function call), closing an
// item when the next begins, and response.completed with the usage.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, rj *responsesJob, sq *seq) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rs := &responseStream{s: s, w: w}
	start := s.responseObject(rj, sq, nil, "", "in_progress")
	rs.emit("response.created", map[string]any{"response": start})
	rs.emit("response.in_progress", map[string]any{"response": start})
	if fl != nil {
		fl.Flush()
	}
	c := &rj.choices[0]
	var all []int
	held, chunks := 0, 0 // chunks: engine outputs with tokens so far
	for {
		ids, finished, reason, ok := s.await(r, sq)
		if !ok || reason == "abort" {
			return
		}
		malformed := false
		if len(ids) > 0 {
			// The request's faults, after as many outputs as they say.
			f := rj.fault
			switch {
			case chunks == f.errorAfter:
				s.abortAll([]*seq{sq})
				rs.emit("error", map[string]any{"code": "InternalServerError", "param": nil,
					"message": "The simulated engine failed mid-generation (injected by the simulator)."})
				if fl != nil {
					fl.Flush()
				}
				return
			case chunks == f.abortAfter:
				s.abortAll([]*seq{sq})
				panic(http.ErrAbortHandler)
			case f.stall > 0 && chunks == f.stallAfter:
				if !sleepCtx(r, f.stall) {
					s.abortAll([]*seq{sq})
					return
				}
				var more []int
				more, finished, reason = sq.take()
				ids = append(ids, more...)
			}
			malformed = chunks == f.malformedAfter
			chunks++
		}
		d := s.richDelta(0, c, len(all), ids)
		all = append(all, ids...)
		switch {
		case malformed:
			rs.w.Write([]byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\n\n"))
			rs.seqNo++
			rs.wrote = true
		case d != nil:
			rs.delta(c, d)
		}
		if finished {
			rs.close(c)
			rs.emit("response.completed", map[string]any{"response": s.responseObject(rj, sq, all, reason, "completed")})
		}
		if fl != nil {
			fl.Flush()
		}
		if rs.wrote {
			sq.recordChunk(held + len(ids))
			held, rs.wrote = 0, false
		} else {
			held += len(ids)
		}
		if finished {
			return
		}
	}
}

// delta writes the events of one engine output's delta.
func (rs *responseStream) delta(c *choice, d *chatDelta) {
	if d.Reasoning != nil {
		rs.begin("reasoning", c)
		rs.text += *d.Reasoning
		rs.emit("response.reasoning_text.delta", map[string]any{"content_index": rs.content, "delta": *d.Reasoning,
			"item_id": rs.itemID, "output_index": rs.outIdx})
		rs.content++
		rs.wrote = true
	}
	if d.Content != nil {
		rs.begin("message", c)
		rs.text += *d.Content
		rs.emit("response.output_text.delta", map[string]any{"content_index": rs.content, "delta": *d.Content,
			"item_id": rs.itemID, "logprobs": []any{}, "output_index": rs.outIdx})
		rs.content++
		rs.wrote = true
	}
	if len(d.ToolCalls) > 0 {
		tc := d.ToolCalls[0]
		if tc.Function.Name != "" {
			rs.begin("call", c)
		}
		if a := tc.Function.Arguments; a != nil {
			rs.text += *a
			rs.emit("response.function_call_arguments.delta", map[string]any{"delta": *a, "item_id": rs.itemID,
				"output_index": rs.outIdx})
		}
		rs.wrote = true
	}
}

// begin opens an item of the given phase, closing the one before.
func (rs *responseStream) begin(phase string, c *choice) {
	if rs.phase == phase {
		return
	}
	if rs.phase != "" {
		rs.close(c)
		rs.outIdx++
		rs.content = 0
	}
	rs.phase, rs.text, rs.itemID = phase, "", rs.s.uuidString()
	switch phase {
	case "reasoning":
		rs.emit("response.output_item.added", map[string]any{"item": map[string]any{"id": rs.itemID, "summary": []any{},
			"type": "reasoning", "content": nil, "encrypted_content": nil, "status": "in_progress"}, "output_index": rs.outIdx})
	case "message":
		rs.emit("response.output_item.added", map[string]any{"item": outputMessage{ID: rs.itemID, Content: []outputText{},
			Role: "assistant", Status: "in_progress", Type: "message"}, "output_index": rs.outIdx})
	case "call":
		rs.emit("response.output_item.added", map[string]any{"item": functionCallItem{CallID: callID(c.tool), Name: c.tool.name,
			Type: "function_call", ID: rs.itemID, Status: "in_progress"}, "output_index": rs.outIdx})
		return
	}
	rs.emit("response.content_part.added", map[string]any{"content_index": rs.content, "item_id": rs.itemID,
		"output_index": rs.outIdx, "part": outputText{Annotations: []any{}, Type: "output_text", Logprobs: &[]any{}}})
	rs.content++
}

// close writes the events that end the current item.
func (rs *responseStream) close(c *choice) {
	switch rs.phase {
	case "reasoning":
		rs.emit("response.reasoning_text.done", map[string]any{"content_index": rs.content, "item_id": rs.itemID,
			"output_index": rs.outIdx, "text": rs.text})
		rs.content++
		st := "completed"
		rs.emit("response.output_item.done", map[string]any{"item": reasoningItem{ID: rs.itemID, Summary: []any{}, Type: "reasoning",
			Content: []reasoningText{{Text: rs.text, Type: "reasoning_text"}}, Status: &st}, "output_index": rs.outIdx})
	case "message":
		rs.emit("response.output_text.done", map[string]any{"content_index": rs.content, "item_id": rs.itemID,
			"logprobs": []any{}, "output_index": rs.outIdx, "text": rs.text})
		rs.content++
		part := outputText{Annotations: []any{}, Text: rs.text, Type: "output_text"}
		rs.emit("response.content_part.done", map[string]any{"content_index": rs.content, "item_id": rs.itemID,
			"output_index": rs.outIdx, "part": part})
		rs.content++
		rs.emit("response.output_item.done", map[string]any{"item": outputMessage{ID: rs.itemID, Content: []outputText{part},
			Role: "assistant", Status: "completed", Type: "message", Summary: &[]any{}}, "output_index": rs.outIdx})
	case "call":
		rs.emit("response.function_call_arguments.done", map[string]any{"arguments": rs.text, "item_id": rs.itemID,
			"name": c.tool.name, "output_index": rs.outIdx})
		rs.emit("response.output_item.done", map[string]any{"item": functionCallItem{Arguments: rs.text, CallID: callID(c.tool),
			Name: c.tool.name, Type: "function_call", ID: rs.itemID, Status: "completed"}, "output_index": rs.outIdx})
	}
	rs.phase = ""
}
