// Package hostile serves misbehaving OpenAI-compatible streams over real
// loopback HTTP, for tests of anything that reads them: a giant line, an
// endless stream, events split at every byte, headers trickled slowly,
// invalid UTF-8, wrong content types, an HTTP/1.0 close-delimited body, a
// 200 answer holding an error, usage counts that disagree with the
// chunks, a tool call whose arguments never close, reasoning after the
// answer began, and a Responses API stream that ends without its
// completed event. Each Case carries the record the servegate client must
// produce for it when it sends a request of the case's Backend with
// max_tokens MaxTokens.
package hostile

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/metrics"
)

// MaxTokens is the max_tokens the expected records assume the request
// carries.
const MaxTokens = 8

// Want is the record a client must produce for a case. Fields that do not
// apply to the case are left zero, except OutputTokens and Chunks, where -1
// means "not checked".
type Want struct {
	// Success and Failure are the record's outcome.
	Success bool
	Failure metrics.FailureKind
	// ErrorContains is a piece of the record's error text.
	ErrorContains string
	// OutputTokens is the record's output token count.
	OutputTokens int
	// Chunks is the number of output chunks timed (1 + len(ITL)), 0 when
	// none arrived.
	Chunks int
	// Text is the generated text (checked when Success).
	Text string
}

// A Case is one hostile server.
type Case struct {
	// Name says what the server does wrong.
	Name string
	// Backend is the client backend the case answers (a client.Backends
	// name): "" for completions ("openai"), "openai-chat" or
	// "openai-responses".
	Backend string
	// Want is the record a client must produce.
	Want Want
	// handler answers over net/http; raw, when set instead, owns the
	// whole TCP connection.
	handler http.HandlerFunc
	raw     func(conn net.Conn)
}

// Start serves the case on 127.0.0.1 until the test ends and returns its
// base URL ("http://127.0.0.1:port"); requests go to any path.
func (c Case) Start(tb testing.TB) string {
	tb.Helper()
	if c.handler != nil {
		s := httptest.NewServer(c.handler)
		tb.Cleanup(s.Close)
		return s.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("hostile %s: listen: %v", c.Name, err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				if readRequest(conn) {
					c.raw(conn)
				}
			})
		}
	})
	return "http://" + ln.Addr().String()
}

// readRequest consumes one HTTP request from conn.
func readRequest(conn net.Conn) bool {
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err == nil
}

// Cases returns every case, sized for a test: the giant line is 8 MiB.
func Cases() []Case {
	words := []string{" The", " quick", " brown", " fox", " jumps", " over"}
	text := strings.Join(words, "")
	return []Case{
		GiantLine(8<<20, 2),
		Endless(),
		{
			Name:    "split-every-byte",
			Want:    Want{Success: true, OutputTokens: 6, Chunks: 6, Text: text},
			handler: writeSSE(Stream(words, 6), 1),
		},
		{
			Name: "trickled-headers",
			Want: Want{Success: true, OutputTokens: 6, Chunks: 6, Text: text},
			raw: func(conn net.Conn) {
				body := Stream(words, 6)
				head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\nX-Slow: %s\r\n\r\n", len(body), strings.Repeat("z", 20))
				for i := range len(head) {
					if _, err := conn.Write([]byte{head[i]}); err != nil {
						return
					}
					time.Sleep(time.Millisecond)
				}
				_, _ = conn.Write(body)
			},
		},
		{
			Name:    "invalid-utf8",
			Want:    Want{Success: true, OutputTokens: 3, Chunks: 3, Text: " caf\uFFFD( ok\uFFFD"},
			handler: writeSSE(Stream([]string{" caf\xc3\x28", " ok", "\xff"}, 3), 0),
		},
		{
			Name: "wrong-content-type",
			Want: Want{Failure: metrics.FailureStream, ErrorContains: "text/html", OutputTokens: -1},
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_, _ = io.WriteString(w, "<html><body><h1>Welcome to nginx!</h1></body></html>\n")
			},
		},
		{
			// A proxy that labels the event stream as JSON: the client
			// looks at the body, as vLLM's client never looks at the type.
			Name: "sse-labelled-json",
			Want: Want{Success: true, OutputTokens: 6, Chunks: 6, Text: text},
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(Stream(words, 6))
			},
		},
		{
			Name: "http10-close-delimited",
			Want: Want{Success: true, OutputTokens: 6, Chunks: 6, Text: text},
			raw: func(conn net.Conn) {
				_, _ = io.WriteString(conn, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
				for _, b := range bytes.SplitAfter(Stream(words, 6), []byte("\n\n")) {
					if _, err := conn.Write(b); err != nil {
						return
					}
				}
			},
		},
		{
			Name: "200-error-json",
			Want: Want{Failure: metrics.FailureStream, ErrorContains: "The model is overloaded", OutputTokens: -1},
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"error":{"message":"The model is overloaded","type":"ServiceUnavailableError","code":503}}`)
			},
		},
		{
			// vLLM trusts usage over the chunk count. servegate fails a
			// usage below the chunk count, since every chunk holds a token.
			Name:    "usage-below-chunks",
			Want:    Want{Failure: metrics.FailureUsageMismatch, ErrorContains: "usage reports 2 completion tokens but the stream carried 6 output chunks", OutputTokens: -1, Chunks: 6},
			handler: writeSSE(Stream(words, 2), 0),
		},
		{
			Name:    "usage-beyond-max-tokens",
			Want:    Want{Failure: metrics.FailureExcessOutput, ErrorContains: "1000000 completion tokens", OutputTokens: -1, Chunks: -1},
			handler: writeSSE(Stream(words, 1_000_000), 0),
		},
		ToolCallNeverCloses(),
		ReasoningAfterContent(),
		ReasoningUsageDisagrees(),
		ResponsesWithoutCompleted(),
	}
}

// GiantLine is a server that sends lines data lines of size bytes each
// (then a normal end), never holding more than 64 KiB of it at once.
func GiantLine(size, lines int) Case {
	return Case{
		Name: fmt.Sprintf("giant-line-%dx%dMiB", lines, size>>20),
		Want: Want{Failure: metrics.FailureLineTooLong, ErrorContains: "over 1048576 bytes", OutputTokens: -1},
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			block := bytes.Repeat([]byte("x"), 64<<10)
			for range lines {
				if _, err := io.WriteString(w, `data: {"choices":[{"index":0,"text":"`); err != nil {
					return
				}
				for n := 0; n < size; n += len(block) {
					if _, err := w.Write(block[:min(len(block), size-n)]); err != nil {
						return
					}
				}
				if _, err := io.WriteString(w, "\"}]}\n\n"); err != nil {
					return
				}
			}
			_, _ = w.Write(Stream(nil, lines))
		},
	}
}

// Endless is a server that streams one-token chunks until the client goes
// away.
func Endless() Case {
	return Case{
		Name: "endless-stream",
		Want: Want{Failure: metrics.FailureExcessOutput, ErrorContains: "more output than max_tokens", OutputTokens: -1, Chunks: -1},
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			f := w.(http.Flusher)
			chunk := chunkEvent(" again")
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				f.Flush()
			}
		},
	}
}

// Stream renders a vLLM completions stream: one chunk per text, a usage
// chunk reporting completion tokens (none when negative), and [DONE].
func Stream(texts []string, completion int) []byte {
	var b bytes.Buffer
	for _, t := range texts {
		b.Write(chunkEvent(t))
	}
	if completion >= 0 {
		fmt.Fprintf(&b, `data: {"id":"cmpl-h","object":"text_completion","choices":[],"usage":{"prompt_tokens":3,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", 3+completion, completion)
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// chunkEvent is one completions chunk carrying text, written raw so that
// invalid UTF-8 reaches the wire.
func chunkEvent(text string) []byte {
	return []byte(`data: {"id":"cmpl-h","object":"text_completion","choices":[{"index":0,"text":"` + text + `","logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
}

// writeSSE answers with body as an event stream, split bytes a write (0:
// all at once), each flushed.
func writeSSE(body []byte, split int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		if split <= 0 {
			split = len(body)
		}
		for b := body; len(b) > 0; {
			k := min(split, len(b))
			if _, err := w.Write(b[:k]); err != nil {
				return
			}
			f.Flush()
			b = b[k:]
		}
	}
}

// chatEvent is one chat chunk with delta (a JSON object) and finish
// reason (null when empty).
func chatEvent(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-h","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}` + "\n\n"
}

// chatEnd is the chat usage chunk (with completion_tokens_details when
// details is set) and [DONE].
func chatEnd(completion int, details string) string {
	if details != "" {
		details = `,"completion_tokens_details":` + details
	}
	return fmt.Sprintf(`data: {"id":"chatcmpl-h","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"total_tokens":%d,"completion_tokens":%d%s}}`+"\n\ndata: [DONE]\n\n", 3+completion, completion, details)
}

// ToolCallNeverCloses is a chat stream whose tool call's arguments never
// close: the stream ends with finish_reason tool_calls and the arguments
// still open.
func ToolCallNeverCloses() Case {
	body := chatEvent(`{"role":"assistant","content":""}`, "") +
		chatEvent(`{"tool_calls":[{"id":"call_h1","type":"function","index":0,"function":{"name":"lookup","arguments":""}}]}`, "") +
		chatEvent(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\": \"never"}}]}`, "") +
		chatEvent(`{"tool_calls":[{"index":0,"function":{"arguments":" closed"}}]}`, "tool_calls") +
		chatEnd(3, "")
	return Case{
		Name:    "tool-call-never-closes",
		Backend: "openai-chat",
		Want:    Want{Failure: metrics.FailureBrokenToolCall, ErrorContains: `tool call 0 (id "call_h1", function "lookup"): arguments are not valid JSON`, OutputTokens: -1, Chunks: 3},
		handler: writeSSE([]byte(body), 0),
	}
}

// ReasoningAfterContent is a chat stream that goes back to reasoning
// after its answer began.
func ReasoningAfterContent() Case {
	body := chatEvent(`{"role":"assistant","content":""}`, "") +
		chatEvent(`{"reasoning_content":"First,"}`, "") +
		chatEvent(`{"content":"The answer"}`, "") +
		chatEvent(`{"reasoning_content":" wait, no"}`, "") +
		chatEvent(`{"content":" is 4."}`, "stop") +
		chatEnd(4, "")
	return Case{
		Name:    "reasoning-after-content",
		Backend: "openai-chat",
		Want:    Want{Failure: metrics.FailureReasoningAfterContent, ErrorContains: "reasoning delta after the answer began", OutputTokens: -1, Chunks: 2},
		handler: writeSSE([]byte(body), 0),
	}
}

// ReasoningUsageDisagrees is a chat stream whose usage reports more
// reasoning tokens than completion tokens.
func ReasoningUsageDisagrees() Case {
	body := chatEvent(`{"reasoning_content":"Hmm."}`, "") +
		chatEvent(`{"content":"Yes."}`, "stop") +
		chatEnd(2, `{"reasoning_tokens":5}`)
	return Case{
		Name:    "reasoning-usage-disagrees",
		Backend: "openai-chat",
		Want:    Want{Failure: metrics.FailureUsageMismatch, ErrorContains: "5 reasoning tokens, more than its 2 completion tokens", OutputTokens: -1, Chunks: 2},
		handler: writeSSE([]byte(body), 0),
	}
}

// responsesEvent is one Responses API event as vLLM writes it.
func responsesEvent(typ, fields string) string {
	return "event: " + typ + "\ndata: {" + fields + `,"sequence_number":0,"type":"` + typ + `"}` + "\n\n"
}

// ResponsesWithoutCompleted is a Responses API stream that streams its
// answer and ends without response.completed (so without usage).
func ResponsesWithoutCompleted() Case {
	body := responsesEvent("response.created", `"response":{"id":"resp_h","status":"in_progress","usage":null}`) +
		responsesEvent("response.output_text.delta", `"content_index":0,"delta":"Half","item_id":"msg_h","output_index":0`) +
		responsesEvent("response.output_text.delta", `"content_index":1,"delta":" an answer","item_id":"msg_h","output_index":0`)
	return Case{
		Name:    "responses-without-completed",
		Backend: "openai-responses",
		Want:    Want{Failure: metrics.FailureMissingCompleted, ErrorContains: "without response.completed", OutputTokens: -1, Chunks: 2},
		handler: writeSSE([]byte(body), 0),
	}
}
