package client

import (
	"errors"
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
	// reasoning is true when the chat delta carries non-empty reasoning
	// ("reasoning_content" or "reasoning"), output that vLLM times but
	// does not add to the generated text.
	reasoning bool
	// completion and prompt are the "usage" object's token counts (-1
	// when the event has no usage or the count is absent).
	completion, prompt int
	// isError is true for an error event ({"error": ...} or
	// {"object": "error", ...}); errMsg is its message.
	isError bool
	errMsg  string
}

var errSyntax = errors.New("invalid JSON")

// parseChunk parses an OpenAI streaming event, appending choices[0]'s text
// to text.
// scratch, when not nil, is reused for escaped keys and short values
// across calls, so that steady-state parsing allocates nothing.
func parseChunk(data []byte, text []byte, scratch *[]byte) (chunk, []byte, error) {
	c := chunk{completion: -1, prompt: -1}
	s := jsonScanner{b: data}
	if scratch != nil {
		s.kbuf = (*scratch)[:0]
		defer func() { *scratch = s.kbuf }()
	}
	var msg []byte
	var objectIsError bool
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "choices":
			var err error
			text, err = s.choices(&c, text)
			return err
		case "usage":
			return s.usage(&c)
		case "error":
			c.isError = true
			if s.peek() == '"' {
				var err error
				msg, err = s.str(msg[:0])
				return err
			}
			if s.peek() == 'n' {
				c.isError = false
				return s.skip()
			}
			return s.object(func(k []byte) error {
				if string(k) == "message" && s.peek() == '"' {
					var err error
					msg, err = s.str(msg[:0])
					return err
				}
				return s.skip()
			})
		case "object":
			if s.peek() == '"' {
				v, err := s.key()
				objectIsError = string(v) == "error"
				return err
			}
			return s.skip()
		case "message":
			if s.peek() == '"' && len(msg) == 0 {
				var err error
				msg, err = s.str(msg[:0])
				return err
			}
			return s.skip()
		}
		return s.skip()
	})
	if err != nil {
		return c, text, err
	}
	s.ws()
	if s.i != len(s.b) {
		return c, text, errSyntax
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

// choices reads the choices array, taking only the first choice's text.
func (s *jsonScanner) choices(c *chunk, text []byte) ([]byte, error) {
	if s.peek() != '[' {
		return text, s.skip() // null, or not the array it should be
	}
	idx := 0
	err := s.array(func() error {
		idx++
		if idx > 1 || s.peek() != '{' {
			return s.skip()
		}
		c.choices = true
		return s.object(func(key []byte) error {
			switch string(key) {
			case "text":
				return s.text(c, &text)
			case "delta":
				if s.peek() != '{' {
					return s.skip()
				}
				return s.object(func(k []byte) error {
					switch string(k) {
					case "content":
						return s.text(c, &text)
					case "reasoning_content", "reasoning":
						if s.peek() == '"' {
							st := s.i
							if err := s.skipStr(); err != nil {
								return err
							}
							c.reasoning = c.reasoning || s.i-st > 2
							return nil
						}
						return s.skip()
					case "role":
						c.role = true
					}
					return s.skip()
				})
			}
			return s.skip()
		})
	})
	return text, err
}

// text appends a string value (or nothing for null) to text.
func (s *jsonScanner) text(c *chunk, text *[]byte) error {
	if s.peek() != '"' {
		return s.skip()
	}
	n := len(*text)
	var err error
	*text, err = s.str(*text)
	c.textLen += len(*text) - n
	return err
}

// usage reads the usage object's token counts.
func (s *jsonScanner) usage(c *chunk) error {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(key []byte) error {
		switch string(key) {
		case "completion_tokens":
			v, err := s.int()
			c.completion = v
			return err
		case "prompt_tokens":
			v, err := s.int()
			c.prompt = v
			return err
		}
		return s.skip()
	})
}
