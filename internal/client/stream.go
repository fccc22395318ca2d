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

	"github.com/servegate/servegate/internal/metrics"
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
func (c *Client) readStream(ctx, rctx context.Context, a *answer, bufs *streamBufs, rec *metrics.Record, outCap int, now func() time.Duration) {
	limit := c.lineLimit()
	sse := &bufs.sse
	sse.reset(a.body, now, bufs.read, len(a.buffered), bufs.data, limit)
	if isJSON(a.contentType) && c.jsonAnswer(ctx, rctx, sse, rec) {
		return
	}
	st := &bufs.stream
	st.start(bufs, outCap, max(limit, min(outCap*MaxTokenBytes, MaxTextBytes)), c.Backend)
	// The loop keeps this frame small: the read (sse.next) and the
	// event's parse (st.take) are siblings under it, not nested.
	for {
		ev, err := sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			c.readFailed(ctx, rctx, rec, err)
			break
		}
		if st.take(&ev, rec) {
			break
		}
	}
	c.endStream(rec, a.contentType, bufs)
}

// endStream judges the stream and hands its buffers back to bufs.
func (c *Client) endStream(rec *metrics.Record, contentType string, bufs *streamBufs) {
	st, sse := &bufs.stream, &bufs.sse
	rec.GeneratedText = validText(st.text)
	bufs.read, bufs.data, bufs.text, bufs.scratch = keep(sse.buf), keep(sse.data), keep(st.text), keep(st.scratch)
	*sse = sseReader{} // the pool keeps no body
	if st.outputs > 0 {
		rec.Latency = st.last - rec.Start
	}
	rec.FinishReason = st.finish
	if rec.Failure == metrics.FailureNone {
		c.finishStream(rec, contentType, st)
	}
	bufs.tools.reset()
	*st = streamState{}
}

// jsonAnswer reads an answer labelled JSON when it is not an event
// stream after all (some proxies label one as JSON: look before judging),
// and reports whether it was.
func (c *Client) jsonAnswer(ctx, rctx context.Context, sse *sseReader, rec *metrics.Record) bool {
	if isSSE(sse.peek(16)) {
		return false
	}
	c.readJSONAnswer(ctx, rctx, sse.rest(), rec)
	*sse = sseReader{} // the pool keeps no body
	return true
}

// A streamState is what readStream knows of a stream between events.
type streamState struct {
	text, scratch   []byte
	outCap, textCap int
	chat            bool
	// responses is true for a Responses API stream (responses.go);
	// completed is set by its terminal event.
	responses, completed bool
	last                 time.Duration
	outputs              int
	usageOut             int
	cumulative           int
	perChunk             bool
	chunkToks            []int
	// tools assembles the streamed tool calls.
	tools *toolCalls
	// tokenChunks counts the output chunks that carried something: text,
	// reasoning or a tool call delta (the usage check's floor).
	tokenChunks int
	// reasoningChunks counts the chunks that carried reasoning, and
	// reasoningToks their tokens by per-chunk usage.
	reasoningChunks, reasoningToks int
	// usageReasoning is usage's reasoning_tokens, -1 when not reported.
	usageReasoning int
	// answered is set by the first content delta with text other than
	// white space: reasoning after it fails the stream.
	answered bool
	// finish is the last finish_reason (or Responses status).
	finish string
}

// start readies st for a stream. (Not inlined: the new value would take
// room in readStream's frame.)
//
//go:noinline
func (st *streamState) start(bufs *streamBufs, outCap, textCap int, backend string) {
	bufs.tools.reset()
	*st = streamState{
		text:           bufs.text[:0],
		scratch:        bufs.scratch,
		outCap:         outCap,
		textCap:        textCap,
		chat:           backend == BackendOpenAIChat,
		responses:      backend == BackendOpenAIResponses,
		usageOut:       -1,
		usageReasoning: -1,
		perChunk:       true,
		tools:          &bufs.tools,
	}
}

// take applies one event to the stream and rec; it reports whether the
// stream ends here (a failure recorded in rec).
func (st *streamState) take(ev *sseEvent, rec *metrics.Record) bool {
	if st.responses {
		return st.takeResponse(ev, rec)
	}
	if len(ev.Type) > 0 && string(ev.Type) != "message" {
		if string(ev.Type) == "error" {
			failStream(rec, "stream error event: ", ev.Data)
			return true
		}
		return false
	}
	data := bytes.TrimSpace(ev.Data)
	if string(data) == "[DONE]" || len(data) == 0 {
		return false
	}
	n := len(st.text)
	ch, t, err := parseChunk(data, st.text, &st.scratch, st.tools)
	st.text = t
	if err != nil {
		st.text = st.text[:n]
		badEvent(rec, err, data)
		return true
	}
	if ch.isError {
		st.text = st.text[:n]
		failStream(rec, "stream error: ", []byte(ch.errMsg))
		return true
	}
	if ch.completion >= 0 {
		st.usageOut = ch.completion
	}
	if ch.reasoning >= 0 {
		st.usageReasoning = ch.reasoning
	}
	if ch.prompt > 0 {
		rec.ServerPromptTokens = ch.prompt
	}
	if ch.finish != "" {
		st.finish = ch.finish
	}
	if !ch.choices || (st.chat && ch.role && ch.textLen == 0 && !ch.thinks && !ch.tools) {
		if ch.completion >= 0 {
			st.cumulative = ch.completion
		}
		return false
	}
	if !st.output(ev.At, rec, n, ch.textLen > 0, ch.thinks, ch.tools) {
		return true
	}
	if ch.completion >= 0 {
		k := ch.completion - st.cumulative
		st.chunkToks = append(st.chunkToks, k)
		st.cumulative = ch.completion
		if ch.thinks {
			st.reasoningToks += k
		}
	} else {
		st.perChunk = false
	}
	return false
}

// output counts an output chunk that arrived at at, whose text is
// st.text[n:], and times it; it reports false when the stream ends here
// (too much output, or reasoning after the answer began).
func (st *streamState) output(at time.Duration, rec *metrics.Record, n int, content, thinks, tools bool) bool {
	st.outputs++
	if st.outputs > st.outCap || len(st.text) > st.textCap || st.tools.bytes > st.textCap || st.tools.tooMany {
		st.outputs--
		st.text = st.text[:n]
		excessOutput(rec, st.outCap, st.textCap)
		return false
	}
	if thinks && st.answered {
		st.outputs--
		st.text = st.text[:n]
		rec.Failure = metrics.FailureReasoningAfterContent
		rec.Error = fmt.Sprintf("stream: reasoning delta after the answer began (output chunk %d); a reasoning parser let the two interleave", st.outputs+1)
		return false
	}
	if st.outputs == 1 {
		rec.TTFT = at - rec.Start
	} else {
		rec.ITL = append(rec.ITL, at-st.last)
	}
	st.last = at
	if content {
		if rec.FirstContent == 0 {
			rec.FirstContent = at - rec.Start
		}
		if !st.answered && len(bytes.TrimSpace(st.text[n:])) > 0 {
			st.answered = true
		}
	}
	if thinks {
		st.reasoningChunks++
		if rec.FirstReasoning == 0 {
			rec.FirstReasoning = at - rec.Start
		}
	}
	if content || thinks || tools {
		st.tokenChunks++
	}
	return true
}

// The helpers below keep what runs once a stream out of readStream's
// frame, which is under the read of every open stream (see DoPrepared).

// readFailed records a failed read of the stream.
func (c *Client) readFailed(ctx, rctx context.Context, rec *metrics.Record, err error) {
	if _, ok := err.(*lineTooLongError); ok {
		rec.Failure, rec.Error = metrics.FailureLineTooLong, err.Error()
		return
	}
	c.fail(ctx, rctx, rec, err)
}

// failStream records a stream that failed with a message.
func failStream(rec *metrics.Record, prefix string, msg []byte) {
	rec.Failure = metrics.FailureStream
	rec.Error = prefix + string(msg)
}

// badEvent records an event that is not a valid chunk.
func badEvent(rec *metrics.Record, err error, data []byte) {
	rec.Failure = metrics.FailureStream
	rec.Error = fmt.Sprintf("stream: %v in event %q", err, truncate(data, 200))
}

// excessOutput records a stream cut for sending too much.
func excessOutput(rec *metrics.Record, outCap, textCap int) {
	rec.Failure = metrics.FailureExcessOutput
	rec.Error = fmt.Sprintf("server sent more output than max_tokens allows (over %d chunks or %d text bytes); stream closed", outCap, textCap)
}

// validText is the generated text, invalid UTF-8 replaced by U+FFFD.
func validText(text []byte) string {
	if utf8.Valid(text) {
		return string(text)
	}
	return strings.ToValidUTF8(string(text), "\uFFFD")
}

// finishStream judges a stream that ended without failing: it needs an
// output chunk (and, for the Responses API, its terminal event), usage
// within the output cap and agreeing with the chunks (see
// metrics.FailureUsageMismatch), and tool calls that parse.
func (c *Client) finishStream(rec *metrics.Record, contentType string, st *streamState) {
	outputs, usageOut, outCap := st.outputs, st.usageOut, st.outCap
	if outputs == 0 {
		rec.Failure = metrics.FailureStream
		rec.Error = errNoChunk
		if ct := contentType; !strings.HasPrefix(ct, "text/event-stream") {
			rec.Error += fmt.Sprintf(" (the answer's Content-Type is %q, not text/event-stream)", ct)
		}
		return
	}
	if st.responses && !st.completed {
		rec.Failure = metrics.FailureMissingCompleted
		rec.Error = fmt.Sprintf("responses stream ended after %d output events without response.completed (no usage)", outputs)
		return
	}
	if usageOut > outCap {
		rec.Failure = metrics.FailureExcessOutput
		rec.Error = fmt.Sprintf("server reported %d completion tokens, more than max_tokens allows (%d)", usageOut, outCap)
		return
	}
	calls, err := st.tools.records()
	rec.ToolCalls = calls
	if err != nil {
		rec.Failure, rec.Error = metrics.FailureBrokenToolCall, err.Error()
		return
	}
	if msg := usageMismatch(st); msg != "" {
		rec.Failure, rec.Error = metrics.FailureUsageMismatch, msg
		return
	}
	rec.Success = true
	if st.perChunk {
		rec.ChunkTokens = st.chunkToks
	}
	switch {
	case usageOut > 0:
		rec.OutputTokens = usageOut
	case c.Tokenizer != nil:
		rec.OutputTokens = c.Tokenizer.Count(rec.GeneratedText)
	}
	switch {
	case st.usageReasoning > 0:
		rec.ReasoningTokens = st.usageReasoning
	case st.perChunk && len(st.chunkToks) > 0:
		rec.ReasoningTokens = st.reasoningToks
	default:
		rec.ReasoningTokens = st.reasoningChunks
	}
	rec.ContentTokens = rec.OutputTokens
	if usageOut > 0 {
		rec.ContentTokens = max(usageOut-rec.ReasoningTokens, 0)
	}
}

// usageMismatch says how the stream's usage contradicts its chunks, ""
// when it does not (or sent none). Every chunk that carried output holds
// at least one token, so usage may count more tokens than chunks
// (speculative decoding, a parser that held tokens back) but never
// fewer; a server that reports reasoning tokens (more than 0: vLLM may
// report 0 or nothing) reports at least one a reasoning chunk, and no
// more than all its completion tokens.
func usageMismatch(st *streamState) string {
	if st.usageOut >= 0 && st.usageOut < st.tokenChunks {
		return fmt.Sprintf("usage reports %d completion tokens but the stream carried %d output chunks", st.usageOut, st.tokenChunks)
	}
	if st.usageReasoning > 0 {
		if st.usageOut >= 0 && st.usageReasoning > st.usageOut {
			return fmt.Sprintf("usage reports %d reasoning tokens, more than its %d completion tokens", st.usageReasoning, st.usageOut)
		}
		if st.usageReasoning < st.reasoningChunks {
			return fmt.Sprintf("usage reports %d reasoning tokens but the stream carried %d reasoning chunks", st.usageReasoning, st.reasoningChunks)
		}
	}
	return ""
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
