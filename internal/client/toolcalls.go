package client

import (
	"encoding/json"
	"fmt"

	"github.com/servegate/servegate/internal/jsonscan"
	"github.com/servegate/servegate/internal/metrics"
)

// MaxToolCalls is how many tool calls one answer may stream; a stream
// with more fails as metrics.FailureExcessOutput.
const MaxToolCalls = 128

// A toolCall is one call being assembled from its deltas, its id, name
// and arguments in buffers reused across streams.
type toolCall struct {
	// key is the call's index (chat's tool_calls[].index, the Responses
	// API's output_index).
	key            int
	id, name, args []byte
}

// toolCalls assembles the tool calls of one stream. Its buffers are
// reused from stream to stream, so that a stream with tool calls
// allocates only its record's strings at the end.
type toolCalls struct {
	calls []toolCall
	n     int // calls in use
	// bytes is the total of ids, names and arguments, bounded by the
	// stream's text cap.
	bytes int
	// tooMany is set when a stream named more than MaxToolCalls calls.
	tooMany bool
	// tmp holds one delta's decoded strings until its index is known.
	tmp []byte
}

// reset empties t for a new stream, keeping its buffers.
func (t *toolCalls) reset() {
	for i := range t.calls[:t.n] {
		c := &t.calls[i]
		c.id, c.name, c.args = keep(c.id), keep(c.name), keep(c.args)
	}
	t.n, t.bytes, t.tooMany = 0, 0, false
	t.tmp = keep(t.tmp)
}

// call returns the call with key, adding it when new (nil past
// MaxToolCalls).
func (t *toolCalls) call(key int) *toolCall {
	for i := range t.calls[:t.n] {
		if t.calls[i].key == key {
			return &t.calls[i]
		}
	}
	if t.n == MaxToolCalls {
		t.tooMany = true
		return nil
	}
	if t.n == len(t.calls) {
		t.calls = append(t.calls, toolCall{})
	}
	c := &t.calls[t.n]
	t.n++
	c.key, c.id, c.name, c.args = key, c.id[:0], c.name[:0], c.args[:0]
	return c
}

// last returns the call added last, nil when there is none.
func (t *toolCalls) last() *toolCall {
	if t.n == 0 {
		return nil
	}
	return &t.calls[t.n-1]
}

// apply adds one delta to the call with key: the id and name when the
// call has none yet (a name streamed in pieces is appended), arguments
// appended.
func (t *toolCalls) apply(key int, id, name, args []byte) {
	c := t.call(key)
	if c == nil {
		return
	}
	if len(c.id) == 0 {
		c.id = append(c.id, id...)
		t.bytes += len(id)
	}
	if len(name) > 0 && string(c.name) != string(name) {
		c.name = append(c.name, name...)
		t.bytes += len(name)
	}
	c.args = append(c.args, args...)
	t.bytes += len(args)
}

// setArgs replaces the arguments of the call with key by the full text
// a server sent at the end (the Responses API's ...arguments.done).
func (t *toolCalls) setArgs(key int, args []byte) {
	if c := t.call(key); c != nil {
		t.bytes += len(args) - len(c.args)
		c.args = append(c.args[:0], args...)
	}
}

// parseDeltas reads a chat delta's tool_calls array: each element's
// index, id, function.name and function.arguments. An element without an
// index continues the last call unless it names a new id.
func (t *toolCalls) parseDeltas(s *jsonscan.Scanner) error {
	return s.Array(func() error {
		if s.Peek() != '{' {
			return s.Skip()
		}
		key := -1
		t.tmp = t.tmp[:0]
		var id, name, args [2]int // ranges in tmp
		str := func(r *[2]int) error {
			if s.Peek() != '"' {
				return s.Skip()
			}
			r[0] = len(t.tmp)
			var err error
			t.tmp, err = s.AppendString(t.tmp)
			r[1] = len(t.tmp)
			return err
		}
		err := s.Object(func(k []byte) error {
			switch string(k) {
			case "index":
				if s.Peek() == 'n' {
					return s.Skip()
				}
				v, err := s.Int()
				key = v
				return err
			case "id":
				return str(&id)
			case "function":
				if s.Peek() != '{' {
					return s.Skip()
				}
				return s.Object(func(k []byte) error {
					switch string(k) {
					case "name":
						return str(&name)
					case "arguments":
						return str(&args)
					}
					return s.Skip()
				})
			}
			return s.Skip()
		})
		if err != nil {
			return err
		}
		idb := t.tmp[id[0]:id[1]]
		if key < 0 {
			key = 0
			if last := t.last(); last != nil {
				key = last.key
				if len(idb) > 0 && string(idb) != string(last.id) {
					key = last.key + 1
				}
			}
		}
		t.apply(key, idb, t.tmp[name[0]:name[1]], t.tmp[args[0]:args[1]])
		return nil
	})
}

// records returns the assembled calls for a record, in the order they
// were first streamed, and an error naming the first broken one: a call
// without a function name, or whose arguments are not valid JSON (empty
// arguments are a call without any).
func (t *toolCalls) records() ([]metrics.ToolCall, error) {
	if t.n == 0 {
		return nil, nil
	}
	out := make([]metrics.ToolCall, t.n)
	var broken error
	for i := range t.calls[:t.n] {
		c := &t.calls[i]
		out[i] = metrics.ToolCall{ID: string(c.id), Name: string(c.name), Arguments: string(c.args)}
		if broken != nil {
			continue
		}
		switch {
		case len(c.name) == 0:
			broken = fmt.Errorf("tool call %d (id %q) has no function name", i, c.id)
		case len(c.args) > 0 && !json.Valid(c.args):
			broken = fmt.Errorf("tool call %d (id %q, function %q): arguments are not valid JSON: %q", i, c.id, c.name, truncate(c.args, 200))
		}
	}
	return out, broken
}
