package sim

import (
	"strconv"
)

// chunkWriter encodes content chunks by splicing the text, logprobs, finish
// reason and usage into bytes prepared once per request and choice. It writes exactly what
// marshalling contentChunk's value would (a test holds them equal), without
// reflection, so that thousands of streams cost the server little.
type chunkWriter struct {
	chat       bool
	continuous bool
	prompt     int
	head       []byte // up to the opening quote of the text
	buf        []byte
}

func (s *Server) newChunkWriter(j *job, index int) *chunkWriter {
	c := &chunkWriter{chat: j.chat, continuous: j.continuous, prompt: len(j.prompt)}
	object := "text_completion"
	if j.chat {
		object = "chat.completion.chunk"
	}
	h := []byte(`data: {"id":`)
	h = append(h, marshal(j.id)...)
	h = append(h, `,"object":"`+object+`","created":`...)
	h = strconv.AppendInt(h, j.created, 10)
	h = append(h, `,"model":`...)
	h = append(h, marshal(s.p.Model)...)
	h = append(h, `,"choices":[{"index":`...)
	h = strconv.AppendInt(h, int64(index), 10)
	if j.chat {
		h = append(h, `,"delta":{"content":`...)
	} else {
		h = append(h, `,"text":`...)
	}
	c.head = h
	return c
}

// chunk returns the SSE event for text; lp is the choice's logprobs JSON
// (nil for null); finish is "" until the last chunk; sent counts the
// choice's tokens sent so far, these included.
func (c *chunkWriter) chunk(text string, lp []byte, finish string, sent int) []byte {
	b := append(c.buf[:0], c.head...)
	b = appendString(b, text)
	fr := func(b []byte) []byte {
		if finish == "" {
			return append(b, "null"...)
		}
		return append(append(append(b, '"'), finish...), '"')
	}
	usage := func(b []byte, full bool) []byte {
		b = append(b, `{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(c.prompt), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(c.prompt+sent), 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(sent), 10)
		if full {
			b = append(b, `,"prompt_tokens_details":null`...)
		}
		return append(b, '}')
	}
	logprobs := func(b []byte) []byte {
		if lp == nil {
			return append(b, "null"...)
		}
		return append(b, lp...)
	}
	if c.chat {
		b = append(b, `,"reasoning_content":null},"logprobs":`...)
		b = logprobs(b)
		b = append(b, `,"finish_reason":`...)
		b = fr(b)
		if finish != "" {
			b = append(b, `,"stop_reason":null`...)
		}
		b = append(b, `,"token_ids":null}]`...)
		if c.continuous {
			b = append(b, `,"usage":`...)
			b = usage(b, false)
		}
	} else {
		b = append(b, `,"logprobs":`...)
		b = logprobs(b)
		b = append(b, `,"finish_reason":`...)
		b = fr(b)
		b = append(b, `,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}],"usage":`...)
		if c.continuous {
			b = usage(b, true)
		} else {
			b = append(b, "null"...)
		}
	}
	b = append(b, "}\n\n"...)
	c.buf = b
	return b
}
