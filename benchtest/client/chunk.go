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

// parseChunk parses an OpenAI streaming event, appending choices[0]'s text
// to text.
// scratch, when not nil, is reused for escaped keys and short values
// across calls, so that steady-state parsing allocates nothing.
func parseChunk(data []byte, text []byte, scratch *[]byte) (chunk, []byte, error) {
	c := chunk{completion: -1, prompt: -1}
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
			text, err = choices(&s, &c, text)
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

// choices reads the choices array, taking only the first choice's text.
func choices(s *jsonscan.Scanner, c *chunk, text []byte) ([]byte, error) {
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
							c.reasoning = c.reasoning || s.Pos()-st > 2
							return nil
						}
						return s.Skip()
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
		}
		return s.Skip()
	})
}
