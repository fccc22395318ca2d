package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/servegate/servegate/benchtest/metrics"
)

// errNoChunk is vLLM's complaint about a stream without output.
const errNoChunk = "never received a valid chunk to calculate TTFT; this response will be marked as failed"

// readStream reads a streamed completion or chat completion into rec.
//
// An output chunk is an event whose "choices" is not empty, except chat's
// role-only first chunk (delta with a role and no text), which vLLM counts
// but which carries no output. Reasoning deltas are output chunks; like
// vLLM, only content goes into the generated text. TTFT is taken at the
// first output chunk, an ITL gap before each later one, and the latency at
// the last one, each at the moment the read that completed the chunk
// returned, as now tells it (over a stamped connection, when the bytes of
// that read arrived; see stampedConn). A usage-only chunk sets the token counts and moves no
// timestamp. When output chunks carry cumulative usage
// (continuous_usage_stats), each chunk's token count is recorded in
// ChunkTokens.
//
// What the server sends is bounded: a line or event past the line cap
// fails the request as FailureLineTooLong, and more than outCap output
// chunks or usage tokens, or more text than MaxTokenBytes a token of
// outCap, as FailureExcessOutput; either way the stream is closed. A
// 200 answer with a JSON body (a server that ignored "stream") fails with
// the server's message. Invalid UTF-8 in the text is replaced by U+FFFD,
// as the JSON result would write it anyway.
func (c *Client) readStream(ctx, rctx context.Context, a answer, bufs *streamBufs, rec *metrics.Record, outCap int, now func() time.Duration) {
	limit := c.lineLimit()
	sse := newSSEReader(a.body, now, bufs.read, len(a.buffered), bufs.data, limit)
	if isJSON(a.contentType) {
		// Some proxies label an event stream as JSON: look before judging.
		if !isSSE(sse.peek(16)) {
			c.readJSONAnswer(ctx, rctx, sse.rest(), rec)
			return
		}
	}
	textCap := max(limit, min(outCap*MaxTokenBytes, MaxTextBytes))
	chat := c.Backend == BackendOpenAIChat
	var (
		text       = bufs.text[:0]
		last       time.Duration
		outputs    int
		usageOut   = -1
		cumulative = 0
		perChunk   = true
		chunkToks  []int
		scratch    = bufs.scratch
	)
	for {
		ev, err := sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if _, ok := err.(*lineTooLongError); ok {
				rec.Failure, rec.Error = metrics.FailureLineTooLong, err.Error()
				break
			}
			c.fail(ctx, rctx, rec, err)
			break
		}
		if len(ev.Type) > 0 && string(ev.Type) != "message" {
			if string(ev.Type) == "error" {
				rec.Failure = metrics.FailureStream
				rec.Error = "stream error event: " + string(ev.Data)
				break
			}
			continue
		}
		data := bytes.TrimSpace(ev.Data)
		if string(data) == "[DONE]" {
			continue
		}
		if len(data) == 0 {
			continue
		}
		n := len(text)
		ch, t, err := parseChunk(data, text, &scratch)
		text = t
		if err != nil {
			text = text[:n]
			rec.Failure = metrics.FailureStream
			rec.Error = fmt.Sprintf("stream: %v in event %q", err, truncate(data, 200))
			break
		}
		if ch.isError {
			text = text[:n]
			rec.Failure = metrics.FailureStream
			rec.Error = "stream error: " + ch.errMsg
			break
		}
		if ch.completion >= 0 {
			usageOut = ch.completion
		}
		if ch.prompt > 0 {
			rec.ServerPromptTokens = ch.prompt
		}
		if !ch.choices || (chat && ch.role && ch.textLen == 0 && !ch.reasoning) {
			if ch.completion >= 0 {
				cumulative = ch.completion
			}
			continue
		}
		outputs++
		if outputs > outCap || len(text) > textCap {
			outputs--
			text = text[:n]
			rec.Failure = metrics.FailureExcessOutput
			rec.Error = fmt.Sprintf("server sent more output than max_tokens allows (over %d chunks or %d text bytes); stream closed", outCap, textCap)
			break
		}
		if outputs == 1 {
			rec.TTFT = ev.At - rec.Start
		} else {
			rec.ITL = append(rec.ITL, ev.At-last)
		}
		last = ev.At
		if ch.completion >= 0 {
			chunkToks = append(chunkToks, ch.completion-cumulative)
			cumulative = ch.completion
		} else {
			perChunk = false
		}
	}
	if utf8.Valid(text) {
		rec.GeneratedText = string(text)
	} else {
		rec.GeneratedText = strings.ToValidUTF8(string(text), "\uFFFD")
	}
	bufs.read, bufs.data, bufs.text, bufs.scratch = keep(sse.buf), keep(sse.data), keep(text), keep(scratch)
	if outputs > 0 {
		rec.Latency = last - rec.Start
	}
	if rec.Failure != metrics.FailureNone {
		return
	}
	if outputs == 0 {
		rec.Failure = metrics.FailureStream
		rec.Error = errNoChunk
		if ct := a.contentType; !strings.HasPrefix(ct, "text/event-stream") {
			rec.Error += fmt.Sprintf(" (the answer's Content-Type is %q, not text/event-stream)", ct)
		}
		return
	}
	if usageOut > outCap {
		rec.Failure = metrics.FailureExcessOutput
		rec.Error = fmt.Sprintf("server reported %d completion tokens, more than max_tokens allows (%d)", usageOut, outCap)
		return
	}
	rec.Success = true
	if perChunk {
		rec.ChunkTokens = chunkToks
	}
	switch {
	case usageOut > 0:
		rec.OutputTokens = usageOut
	case c.Tokenizer != nil:
		rec.OutputTokens = c.Tokenizer.Count(rec.GeneratedText)
	}
}

// isJSON reports whether a Content-Type is JSON's.
func isJSON(contentType string) bool {
	return strings.HasPrefix(contentType, "application/json")
}

// isSSE reports whether a body starting with head is an event stream.
func isSSE(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	for _, p := range []string{"data:", "event:", ":", "id:", "retry:"} {
		if bytes.HasPrefix(head, []byte(p)) {
			return true
		}
	}
	return false
}

// readJSONAnswer fails a streamed request answered with a JSON body: the
// server ignored "stream" or sent an error with status 200.
func (c *Client) readJSONAnswer(ctx, rctx context.Context, r io.Reader, rec *metrics.Record) {
	body, ok := c.readBody(ctx, rctx, r, rec, c.lineLimit())
	if !ok {
		return
	}
	rec.Failure = metrics.FailureStream
	rec.Error = "HTTP 200 with a JSON body instead of an event stream"
	if msg := serverMessage(body); msg != "" {
		rec.Error += ": " + msg
	}
}

// readBody reads a whole response body of at most limit bytes; a longer
// one fails the request as FailureLineTooLong.
func (c *Client) readBody(ctx, rctx context.Context, r io.Reader, rec *metrics.Record, limit int) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		c.fail(ctx, rctx, rec, err)
		return nil, false
	}
	if len(body) > limit {
		rec.Failure = metrics.FailureLineTooLong
		rec.Error = fmt.Sprintf("response body over %d bytes; closed", limit)
		return nil, false
	}
	return body, true
}

// readPooling reads an embeddings or rerank response: latency (and TTFT)
// at the end of the body, prompt tokens from its usage.
func (c *Client) readPooling(ctx, rctx context.Context, r io.Reader, rec *metrics.Record, now func() time.Duration) {
	body, ok := c.readBody(ctx, rctx, r, rec, PoolingBodyFactor*c.lineLimit())
	if !ok {
		return
	}
	rec.Latency = now() - rec.Start
	rec.TTFT = rec.Latency
	var v struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		rec.Failure = metrics.FailureStream
		rec.Error = fmt.Sprintf("decode response: %v", err)
		return
	}
	rec.ServerPromptTokens = v.Usage.PromptTokens
	rec.Success = true
}

// fail records a transport-level error, telling cancellation of the run
// (ctx) from the request's own timeout (rctx, or with the own transport a
// connection deadline passed while ctx was live) and from network
// failures.
func (c *Client) fail(ctx, rctx context.Context, rec *metrics.Record, err error) {
	rec.Success = false
	var nerr net.Error
	switch {
	case ctx.Err() != nil:
		rec.Failure = metrics.FailureCanceled
		rec.Error = fmt.Sprintf("canceled: %v", context.Cause(ctx))
		return
	case rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) ||
		(c.Timeout > 0 && errors.Is(err, os.ErrDeadlineExceeded)):
		rec.Failure = metrics.FailureTimeout
		rec.Error = fmt.Sprintf("timeout after %v: %v", c.Timeout, err)
		return
	case errors.As(err, &nerr) && nerr.Timeout():
		rec.Failure = metrics.FailureTimeout
	default:
		rec.Failure = metrics.FailureTransport
	}
	rec.Error = err.Error()
}

// httpError describes a non-200 answer with the server's own message when
// its body has one (OpenAI {"error": {"message"}}, vLLM {"message"},
// FastAPI {"detail"}), else the start of the body.
func httpError(code int, r io.Reader) string {
	body, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	msg := serverMessage(body)
	status := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	if msg == "" {
		return status
	}
	return status + ": " + msg
}

// serverMessage is the server's own message in an error body, else the
// start of the body.
func serverMessage(body []byte) string {
	msg := strings.TrimSpace(string(body))
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case len(v.Error) > 0 && json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		case len(v.Detail) > 0:
			if json.Unmarshal(v.Detail, &s) == nil {
				msg = s
			} else {
				msg = string(v.Detail)
			}
		}
	}
	if len(msg) > 1000 {
		msg = strings.ToValidUTF8(msg[:1000], "") + "…"
	}
	return msg
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
