package client

import (
	"bytes"

	"github.com/servegate/servegate/internal/jsonscan"
	"github.com/servegate/servegate/internal/metrics"
)

// A responseEvent is what one Responses API stream event says. Its
// strings are ranges of the event's data, decoded only when the type is
// known to need them (the type need not come first: OpenAI's events list
// their fields in alphabetical order).
type responseEvent struct {
	typ []byte
	// delta, arguments, name and callID are raw JSON strings (quotes
	// included), nil when absent: the event's delta and arguments, and
	// its item's name and call_id.
	delta, arguments, name, callID []byte
	// itemArgs are the item's arguments (an output_item event's).
	itemArgs []byte
	// function is true when the event's item is a function_call.
	function bool
	// index is output_index, -1 when absent.
	index int
	// status is the response's status (a terminal event's).
	status []byte
	// output, input and reasoning are the response's usage: output_tokens,
	// input_tokens and output_tokens_details.reasoning_tokens (-1 when
	// absent).
	output, input, reasoning int
	// message is an error's message, raw JSON string.
	message []byte
}

// Responses API event types servegate reads (vLLM 0.13,
// vllm/entrypoints/openai/serving_responses.py, and OpenAI's).
const (
	evTextDelta      = "response.output_text.delta"
	evReasoningDelta = "response.reasoning_text.delta"
	evSummaryDelta   = "response.reasoning_summary_text.delta"
	evItemAdded      = "response.output_item.added"
	evItemDone       = "response.output_item.done"
	evArgsDelta      = "response.function_call_arguments.delta"
	evArgsDone       = "response.function_call_arguments.done"
	evCompleted      = "response.completed"
	evIncomplete     = "response.incomplete"
	evFailed         = "response.failed"
	evError          = "error"
)

// takeResponse applies one Responses API event to the stream and rec, as
// take does for chat chunks; it reports whether the stream ends here.
//
// Output events are output_text deltas (content, appended to the
// generated text), reasoning_text (and reasoning summary) deltas, a
// function_call output item added, and function_call_arguments deltas:
// each is timed as one output chunk. Tool calls are assembled per
// output_index; the arguments of ...arguments.done (or of the finished
// item) replace the deltas' when present. response.completed (or
// response.incomplete, OpenAI's end at max_output_tokens) ends the
// stream with its usage and status; response.failed and error events
// fail it with their message.
func (st *streamState) takeResponse(ev *sseEvent, rec *metrics.Record) bool {
	data := bytes.TrimSpace(ev.Data)
	if string(data) == "[DONE]" || len(data) == 0 {
		return false
	}
	var e responseEvent
	if err := parseResponseEvent(data, &e, &st.scratch); err != nil {
		badEvent(rec, err, data)
		return true
	}
	typ := e.typ
	if len(typ) == 0 {
		typ = ev.Type
	}
	n := len(st.text)
	var content, thinks, tools bool
	switch string(typ) {
	case evTextDelta:
		var err error
		if st.text, err = appendRaw(st.text, e.delta, &st.scratch); err != nil {
			st.text = st.text[:n]
			badEvent(rec, err, data)
			return true
		}
		content = len(st.text) > n
		if !content {
			return false // an empty delta carries nothing
		}
	case evReasoningDelta, evSummaryDelta:
		thinks = len(e.delta) > 2
		if !thinks {
			return false
		}
	case evItemAdded:
		if !e.function {
			return false
		}
		tools = true
		st.toolText(e.index, e.callID, e.name, e.itemArgs, false, &st.scratch)
	case evArgsDelta:
		tools = true
		st.toolText(e.index, nil, nil, e.delta, false, &st.scratch)
	case evArgsDone:
		st.toolText(e.index, nil, e.name, e.arguments, true, &st.scratch)
		return false
	case evItemDone:
		if e.function {
			st.toolText(e.index, e.callID, e.name, e.itemArgs, true, &st.scratch)
		}
		return false
	case evCompleted, evIncomplete:
		st.completed = true
		st.finish = internReason(unquote(e.status))
		if e.output >= 0 {
			st.usageOut = e.output
		}
		if e.reasoning >= 0 {
			st.usageReasoning = e.reasoning
		}
		if e.input > 0 {
			rec.ServerPromptTokens = e.input
		}
		return false
	case evFailed, evError:
		msg := unquote(e.message)
		if len(msg) == 0 {
			msg = data
		}
		failStream(rec, "responses stream "+string(typ)+": ", msg)
		return true
	default:
		return false
	}
	if !st.output(ev.At, rec, n, content, thinks, tools) {
		return true
	}
	st.perChunk = false
	return false
}

// toolText applies a function call's strings (raw JSON, nil when absent)
// to the call at output index key: appended deltas, or with final the
// whole arguments replacing the deltas'.
func (st *streamState) toolText(key int, callID, name, args []byte, final bool, scratch *[]byte) {
	t := st.tools
	t.tmp = t.tmp[:0]
	var r [3][2]int
	for i, raw := range [][]byte{callID, name, args} {
		r[i][0] = len(t.tmp)
		t.tmp, _ = appendRaw(t.tmp, raw, scratch)
		r[i][1] = len(t.tmp)
	}
	if key < 0 {
		key = 0
	}
	id, nm, a := t.tmp[r[0][0]:r[0][1]], t.tmp[r[1][0]:r[1][1]], t.tmp[r[2][0]:r[2][1]]
	if final {
		t.apply(key, id, nm, nil)
		if args != nil {
			t.setArgs(key, a)
		}
		return
	}
	t.apply(key, id, nm, a)
}

// appendRaw appends the decoded JSON string raw (quotes included; nil
// appends nothing) to dst.
func appendRaw(dst, raw []byte, scratch *[]byte) ([]byte, error) {
	if len(raw) < 2 {
		return dst, nil
	}
	s := jsonscan.New(raw, *scratch)
	out, err := s.AppendString(dst)
	*scratch = s.Scratch()
	return out, err
}

// unquote returns a raw JSON string without its quotes (escapes kept: it
// is for short words and messages).
func unquote(raw []byte) []byte {
	if len(raw) < 2 {
		return nil
	}
	return raw[1 : len(raw)-1]
}

// parseResponseEvent reads a Responses API event's fields into e.
func parseResponseEvent(data []byte, e *responseEvent, scratch *[]byte) error {
	*e = responseEvent{index: -1, output: -1, input: -1, reasoning: -1}
	s := jsonscan.New(data, *scratch)
	defer func() { *scratch = s.Scratch() }()
	raw := func(dst *[]byte) error {
		if s.Peek() != '"' {
			return s.Skip()
		}
		st := s.Pos()
		err := s.SkipString()
		*dst = data[st:s.Pos()]
		return err
	}
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "type":
			var t []byte
			err := raw(&t)
			e.typ = unquote(t)
			return err
		case "delta":
			return raw(&e.delta)
		case "arguments":
			return raw(&e.arguments)
		case "name":
			return raw(&e.name)
		case "message":
			return raw(&e.message)
		case "output_index":
			if s.Peek() == 'n' {
				return s.Skip()
			}
			v, err := s.Int()
			e.index = v
			return err
		case "item":
			return parseResponseItem(&s, data, e)
		case "response":
			return parseResponseObject(&s, data, e)
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	if !s.AtEnd() {
		return jsonscan.ErrSyntax
	}
	return nil
}

// parseResponseItem reads an output item: whether it is a function call,
// and its call_id, name and arguments.
func parseResponseItem(s *jsonscan.Scanner, data []byte, e *responseEvent) error {
	if s.Peek() != '{' {
		return s.Skip()
	}
	return s.Object(func(key []byte) error {
		var dst *[]byte
		switch string(key) {
		case "type":
			if s.Peek() != '"' {
				return s.Skip()
			}
			v, err := s.Key()
			e.function = string(v) == "function_call"
			return err
		case "call_id":
			dst = &e.callID
		case "name":
			dst = &e.name
		case "arguments":
			dst = &e.itemArgs
		default:
			return s.Skip()
		}
		if s.Peek() != '"' {
			return s.Skip()
		}
		st := s.Pos()
		err := s.SkipString()
		*dst = data[st:s.Pos()]
		return err
	})
}

// parseResponseObject reads a response object: its status, usage and
// error message.
func parseResponseObject(s *jsonscan.Scanner, data []byte, e *responseEvent) error {
	if s.Peek() != '{' {
		return s.Skip()
	}
	return s.Object(func(key []byte) error {
		switch string(key) {
		case "status":
			if s.Peek() != '"' {
				return s.Skip()
			}
			st := s.Pos()
			err := s.SkipString()
			e.status = data[st:s.Pos()]
			return err
		case "usage":
			if s.Peek() != '{' {
				return s.Skip()
			}
			return s.Object(func(k []byte) error {
				switch string(k) {
				case "output_tokens":
					v, err := s.Int()
					e.output = v
					return err
				case "input_tokens":
					v, err := s.Int()
					e.input = v
					return err
				case "output_tokens_details":
					return reasoningDetails(s, &e.reasoning)
				}
				return s.Skip()
			})
		case "error":
			if s.Peek() != '{' {
				return s.Skip()
			}
			return s.Object(func(k []byte) error {
				if string(k) == "message" && s.Peek() == '"' {
					st := s.Pos()
					err := s.SkipString()
					e.message = data[st:s.Pos()]
					return err
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
}
