package client

import (
	"github.com/servegate/servegate/internal/jsonscan"
)

// A chunk is what one streamed JSON event says. Parsing it appends the
// generated text to a caller's buffer instead of allocating strings, so a
// stream costs no allocation per chunk.
type chunk struct {
	// choices is true when the event has a non-empty "choices" array.
	choices bool
	// role is true when choices[0].delta carries a "role" (chat's first,
	// role-only chunk).
	role bool
	// textLen is the number of text bytes choices[0] added (completions
	// text or chat delta content).
	textLen int
	// thinks is true when the chat delta carries non-empty reasoning
	// ("reasoning_content" or "reasoning"; a delta with both is one
	// reasoning chunk), output that vLLM times but does not add to the
	// generated text.
	thinks bool
	// tools is true when choices[0].delta carries tool_calls deltas
	// (applied to the stream's toolCalls as they are parsed).
	tools bool
	// finish is choices[0].finish_reason, "" when null or absent.
	finish string
	// completion and prompt are the "usage" object's token counts (-1
	// when the event has no usage or the count is absent); reasoning is
	// usage.completion_tokens_details.reasoning_tokens (-1 when absent).
	completion, prompt, reasoning int
	// isError is true for an error event ({"error": ...} or
	// {"object": "error", ...}); errMsg is its message.
	isError bool
	errMsg  string
}

// parseChunk parses an OpenAI streaming event, appending choices[0]'s text
// to text and its tool_calls deltas to tools (when not nil).
// scratch, when not nil, is reused for escaped keys and short values
// across calls, so that steady-state parsing allocates nothing.
func parseChunk(data []byte, text []byte, scratch *[]byte, tools *toolCalls) (chunk, []byte, error) {
	c := chunk{completion: -1, prompt: -1, reasoning: -1}
	var buf []byte
	if scratch != nil {
		buf = *scratch
	}
	s := jsonscan.New(data, buf)
	if scratch != nil {
		defer func() { *scratch = s.Scratch() }()
	}
	var msg []byte
	var objectIsError bool
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "choices":
			var err error
			text, err = choices(&s, &c, text, tools)
			return err
		case "usage":
			return usage(&s, &c)
		case "error":
			c.isError = true
			if s.Peek() == '"' {
				var err error
				msg, err = s.AppendString(msg[:0])
				return err
			}
			if s.Peek() == 'n' {
				c.isError = false
				return s.Skip()
			}
			return s.Object(func(k []byte) error {
				if string(k) == "message" && s.Peek() == '"' {
					var err error
					msg, err = s.AppendString(msg[:0])
					return err
				}
				return s.Skip()
			})
		case "object":
			if s.Peek() == '"' {
				v, err := s.Key()
				objectIsError = string(v) == "error"
				return err
			}
			return s.Skip()
		case "message":
			if s.Peek() == '"' && len(msg) == 0 {
				var err error
				msg, err = s.AppendString(msg[:0])
				return err
			}
			return s.Skip()
		}
		return s.Skip()
	})
	if err != nil {
		return c, text, err
	}
	if !s.AtEnd() {
		return c, text, jsonscan.ErrSyntax
	}
	if objectIsError {
		c.isError = true
	}
	if c.isError {
		c.errMsg = string(msg)
		if c.errMsg == "" {
			c.errMsg = string(data)
		}
	}
	return c, text, nil
}

// choices reads the choices array, taking only the first choice's text,
// reasoning, tool calls and finish reason.
func choices(s *jsonscan.Scanner, c *chunk, text []byte, tools *toolCalls) ([]byte, error) {
	if s.Peek() != '[' {
		return text, s.Skip() // null, or not the array it should be
	}
	idx := 0
	err := s.Array(func() error {
		idx++
		if idx > 1 || s.Peek() != '{' {
			return s.Skip()
		}
		c.choices = true
		return s.Object(func(key []byte) error {
			switch string(key) {
			case "text":
				return appendText(s, c, &text)
			case "finish_reason":
				return finishReason(s, c)
			case "delta":
				if s.Peek() != '{' {
					return s.Skip()
				}
				return s.Object(func(k []byte) error {
					switch string(k) {
					case "content":
						return appendText(s, c, &text)
					case "reasoning_content", "reasoning":
						if s.Peek() == '"' {
							st := s.Pos()
							if err := s.SkipString(); err != nil {
								return err
							}
							c.thinks = c.thinks || s.Pos()-st > 2
							return nil
						}
						return s.Skip()
					case "tool_calls":
						if s.Peek() != '[' || tools == nil {
							return s.Skip()
						}
						c.tools = true
						return tools.parseDeltas(s)
					case "role":
						c.role = true
					}
					return s.Skip()
				})
			}
			return s.Skip()
		})
	})
	return text, err
}

// appendText appends a string value (or nothing for null) to text.
func appendText(s *jsonscan.Scanner, c *chunk, text *[]byte) error {
	if s.Peek() != '"' {
		return s.Skip()
	}
	n := len(*text)
	var err error
	*text, err = s.AppendString(*text)
	c.textLen += len(*text) - n
	return err
}

// usage reads the usage object's token counts.
func usage(s *jsonscan.Scanner, c *chunk) error {
	if s.Peek() != '{' {
		return s.Skip()
	}
	return s.Object(func(key []byte) error {
		switch string(key) {
		case "completion_tokens":
			v, err := s.Int()
			c.completion = v
			return err
		case "prompt_tokens":
			v, err := s.Int()
			c.prompt = v
			return err
		case "completion_tokens_details":
			return reasoningDetails(s, &c.reasoning)
		}
		return s.Skip()
	})
}

// reasoningDetails reads reasoning_tokens from a usage details object
// (completion_tokens_details, output_tokens_details) into n.
func reasoningDetails(s *jsonscan.Scanner, n *int) error {
	if s.Peek() != '{' {
		return s.Skip()
	}
	return s.Object(func(key []byte) error {
		if string(key) == "reasoning_tokens" {
			v, err := s.Int()
			*n = v
			return err
		}
		return s.Skip()
	})
}

// finishReason reads a finish_reason (null reads as none). The common
// reasons are returned as constants, so that reading them allocates
// nothing.
func finishReason(s *jsonscan.Scanner, c *chunk) error {
	if s.Peek() != '"' {
		return s.Skip()
	}
	v, err := s.Key()
	if err != nil {
		return err
	}
	c.finish = internReason(v)
	return nil
}

// internReason returns a finish reason or status as a string, without
// allocating for the usual ones.
func internReason(v []byte) string {
	switch string(v) {
	case "":
		return ""
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "abort":
		return "abort"
	case "completed":
		return "completed"
	case "incomplete":
		return "incomplete"
	}
	return string(v)
}
