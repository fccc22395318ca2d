package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// responsesRequest holds what the simulator reads of a POST /v1/responses
// body (vLLM's ResponsesRequest); other fields are accepted and ignored.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Stream             bool            `json:"stream"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Tools              []responsesTool `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	PreviousResponseID *string         `json:"previous_response_id"`
	// IgnoreEOS is vLLM's extension: generate exactly max_output_tokens.
	IgnoreEOS bool   `json:"ignore_eos"`
	Seed      *int64 `json:"seed"`
}

// responsesTool is a Responses API function tool: name and parameters at
// the top level (the chat API nests them under "function").
type responsesTool struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// responsesItem is one input item: a message (role and content, a string
// or input_text parts), a function_call the model made, or a
// function_call_output.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    string          `json:"output"`
}

// A responsesJob is a Responses request turned into a chat job, with what
// the response echoes back.
type responsesJob struct {
	*job
	req responsesRequest
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	rj, err := s.parseResponsesJob(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	j := rj.job
	if s.refuseFault(w, r, j, arrival) {
		return
	}
	kids := s.submitJob(j, r, arrival)
	defer s.recordFinished(j, kids)
	if j.stream {
		s.streamResponse(w, r, rj, kids[0])
		return
	}
	ids, reason, ok := s.collect(r, kids[0])
	if !ok {
		return
	}
	switch f := j.fault; {
	case f.abortAfter >= 0:
		panic(http.ErrAbortHandler)
	case f.errorAfter >= 0:
		writeError(w, newError(http.StatusInternalServerError, "The simulated engine failed (injected by the simulator)."))
		return
	case f.stall > 0 && !sleepCtx(r, f.stall):
		return
	case f.malformedAfter >= 0:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"` + j.id + `","object":`))
		return
	}
	kids[0].recordChunk(len(ids))
	writeJSON(w, http.StatusOK, s.responseObject(rj, kids[0], ids, reason, "completed"))
}

// collect waits for a sequence's whole output.
func (s *Server) collect(r *http.Request, sq *seq) (out []int, reason string, ok bool) {
	for {
		ids, finished, rsn, ok := s.await(r, sq)
		if !ok || rsn == "abort" {
			return nil, "", false
		}
		out = append(out, ids...)
		if finished {
			return out, rsn, true
		}
	}
}

// parseResponsesJob reads a Responses request: instructions become a
// system message, the input a user message or a list of items, function
// tools the chat template's tools; the rest is a chat job of one choice.
func (s *Server) parseResponsesJob(r *http.Request) (*responsesJob, error) {
	var req responsesRequest
	if err := decodeBody(r, &req, s.genBodyLimit()); err != nil {
		return nil, err
	}
	if err := s.checkModel(req.Model); err != nil {
		return nil, err
	}
	if req.PreviousResponseID != nil {
		return nil, bad(http.StatusNotFound, "Response with id '%s' not found.", *req.PreviousResponseID)
	}
	msgs, err := responsesMessages(req)
	if err != nil {
		return nil, err
	}
	var chatTools json.RawMessage
	if len(req.Tools) > 0 {
		ts := make([]map[string]any, len(req.Tools))
		for i, t := range req.Tools {
			if t.Type != "function" || t.Name == "" {
				return nil, invalid(fmt.Sprintf("tools[%d]: only function tools with a name are supported", i))
			}
			fn := map[string]any{"name": t.Name}
			if len(t.Parameters) > 0 {
				fn["parameters"] = t.Parameters
			}
			ts[i] = map[string]any{"type": "function", "function": fn}
		}
		chatTools = marshal(ts)
	}
	rid := s.requestID(r)
	j := &job{chat: true, rid: rid, id: "resp_" + rid, created: time.Now().Unix(), stream: req.Stream}
	if j.prompt, err = s.chatPrompt(msgs, chatTools); err != nil {
		return nil, err
	}
	if j.tools, err = parseToolChoice(chatTools, req.ToolChoice); err != nil {
		return nil, err
	}
	gr := genRequest{MaxTokens: req.MaxOutputTokens, IgnoreEOS: req.IgnoreEOS, Seed: req.Seed, Temperature: req.Temperature}
	if err := s.setLength(j, &gr); err != nil {
		return nil, err
	}
	if err := s.setSampling(j, &gr); err != nil {
		return nil, err
	}
	if j.fault, err = s.requestFault(r, rid); err != nil {
		return nil, err
	}
	return &responsesJob{job: j, req: req}, nil
}

// responsesMessages turns instructions and input into chat messages.
func responsesMessages(req responsesRequest) ([]chatInMessage, error) {
	var msgs []chatInMessage
	if req.Instructions != nil {
		msgs = append(msgs, chatInMessage{Role: "system", Content: marshal(*req.Instructions)})
	}
	var text string
	if err := json.Unmarshal(req.Input, &text); err == nil {
		return append(msgs, chatInMessage{Role: "user", Content: marshal(text)}), nil
	}
	var items []responsesItem
	if err := json.Unmarshal(req.Input, &items); err != nil || len(items) == 0 {
		return nil, invalid("input: Input should be a valid string or a non-empty list of input items")
	}
	for i, it := range items {
		switch {
		case it.Type == "function_call":
			var tc toolCallIn
			tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = it.CallID, "function", it.Name, marshal(it.Arguments)
			msgs = append(msgs, chatInMessage{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []toolCallIn{tc}})
		case it.Type == "function_call_output":
			msgs = append(msgs, chatInMessage{Role: "tool", ToolCallID: it.CallID, Content: marshal(it.Output)})
		case it.Role != "" && (it.Type == "" || it.Type == "message"):
			msgs = append(msgs, chatInMessage{Role: it.Role, Content: it.Content})
		default:
			return nil, invalid(fmt.Sprintf("input[%d]: unsupported item type %q", i, it.Type))
		}
	}
	return msgs, nil
}
