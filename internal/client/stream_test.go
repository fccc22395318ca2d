package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/tokenizer"
)

func llama3(tb testing.TB) *tokenizer.Tokenizer {
	tb.Helper()
	tok, err := tokenizer.FromFile(fixtures.Tokenizer(tb, fixtures.Llama3))
	if err != nil {
		tb.Fatalf("load tokenizer: %v", err)
	}
	return tok
}

const (
	completionsText = " The café serves 🥐 and \"tea\"\n today."
	chatText        = "Bonjour! Le café ☕ est prêt."
)

// TestRecordedStreams replays vLLM v0.13 streams split at every size from
// one byte (which splits UTF-8 characters, CRLFs and JSON escapes) up.
func TestRecordedStreams(t *testing.T) {
	tests := []struct {
		name, backend, fixture string
		text                   string
		outputTokens, prompt   int
		chunks                 int
		chunkTokens            []int
	}{
		{"completions", BackendOpenAI, "vllm-0.13-completions.sse", completionsText, 8, 12, 8, nil},
		{"vllm backend", BackendVLLM, "vllm-0.13-completions.sse", completionsText, 8, 12, 8, nil},
		{"chat", BackendOpenAIChat, "vllm-0.13-chat.sse", chatText, 8, 42, 8, nil},
		{"chat continuous usage", BackendOpenAIChat, "vllm-0.13-chat-continuous-usage.sse", chatText, 8, 42, 5, []int{2, 2, 1, 2, 1}},
	}
	for _, tt := range tests {
		body := readFixture(t, tt.fixture)
		for _, split := range []int{0, 1, 2, 3, 5, 7, 64, 333} {
			t.Run(fmt.Sprintf("%s/split=%d", tt.name, split), func(t *testing.T) {
				srv := newReplay(t, http.StatusOK, body, split)
				c := newClient(tt.backend, srv.URL)
				rec := c.Do(t.Context(), Request{Prompt: "hi", PromptLen: 3, OutputLen: 16, RequestID: "r-1"})
				if !rec.Success {
					t.Fatalf("failed: %s %s", rec.Failure, rec.Error)
				}
				if rec.GeneratedText != tt.text {
					t.Errorf("text = %q, want %q", rec.GeneratedText, tt.text)
				}
				if rec.OutputTokens != tt.outputTokens {
					t.Errorf("output tokens = %d, want %d", rec.OutputTokens, tt.outputTokens)
				}
				if rec.ServerPromptTokens != tt.prompt || rec.PromptLen != 3 {
					t.Errorf("prompt tokens = %d/%d, want %d/3", rec.ServerPromptTokens, rec.PromptLen, tt.prompt)
				}
				if got := len(rec.ITL) + 1; got != tt.chunks {
					t.Errorf("output chunks = %d, want %d", got, tt.chunks)
				}
				if !slices.Equal(rec.ChunkTokens, tt.chunkTokens) {
					t.Errorf("chunk tokens = %v, want %v", rec.ChunkTokens, tt.chunkTokens)
				}
				if rec.RequestID != "r-1" || rec.HTTPStatus != 200 || rec.Failure != metrics.FailureNone || rec.Error != "" {
					t.Errorf("record = %+v", rec)
				}
				checkTimings(t, rec)
			})
		}
	}
}

// variant rewrites the completions fixture the way some real server or
// proxy frames its events; every variant must parse to the same record.
func TestStreamFramingVariants(t *testing.T) {
	base := readFixture(t, "vllm-0.13-completions.sse")
	noDone := bytes.TrimSuffix(base, []byte("data: [DONE]\n\n"))
	tests := []struct {
		name string
		body []byte
	}{
		{"data without space", replaceAll(base, "data: ", "data:")},
		{"CRLF", replaceAll(base, "\n", "\r\n")},
		{"CR only", replaceAll(base, "\n", "\r")},
		{"comments and pings", replaceAll(base, "\n\n", "\n\n: ping - 2025-11-29 18:00:00\n\n:\n\n")},
		{"comment inside an event", replaceAll(base, "data: ", ": keep-alive\ndata: ")},
		{"event and id lines", replaceAll(base, "data: ", "event: message\nid: 7\nretry: 1000\ndata: ")},
		{"multi-line data", replaceAll(base, `,"choices"`, "\ndata: ,\"choices\"")},
		{"no [DONE]", noDone},
		{"no [DONE] nor final blank line", bytes.TrimSuffix(noDone, []byte("\n\n"))},
		{"blank lines between events", replaceAll(base, "\n\n", "\n\n\n\n")},
		{"unknown event type ignored", append(slices.Clone(noDone), "event: ping\ndata: {}\n\n"...)},
	}
	for _, tt := range tests {
		for _, split := range []int{0, 1, 4} {
			t.Run(fmt.Sprintf("%s/split=%d", tt.name, split), func(t *testing.T) {
				srv := newReplay(t, http.StatusOK, tt.body, split)
				rec := newClient(BackendOpenAI, srv.URL).Do(t.Context(), Request{Prompt: "hi", OutputLen: 8})
				if !rec.Success {
					t.Fatalf("failed: %s %s", rec.Failure, rec.Error)
				}
				if rec.GeneratedText != completionsText || rec.OutputTokens != 8 || len(rec.ITL) != 7 {
					t.Errorf("text %q tokens %d itl %d", rec.GeneratedText, rec.OutputTokens, len(rec.ITL))
				}
				checkTimings(t, rec)
			})
		}
	}
}

// TestStreamFailures covers streams that must end as failed records, with
// the kind and the reason.
func TestStreamFailures(t *testing.T) {
	base := readFixture(t, "vllm-0.13-completions.sse")
	events := strings.SplitAfter(string(base), "\n\n")
	firstTwo := events[0] + events[1]
	tests := []struct {
		name    string
		status  int
		body    string
		kind    metrics.FailureKind
		errText string
		text    string
	}{
		{
			name:    "mid-stream error object",
			status:  200,
			body:    firstTwo + `data: {"error": {"message": "The decoder prompt is too long", "type": "BadRequestError", "param": null, "code": 400}}` + "\n\n",
			kind:    metrics.FailureStream,
			errText: "stream error: The decoder prompt is too long",
			text:    " The café",
		},
		{
			name:    "mid-stream error response (object error)",
			status:  200,
			body:    firstTwo + `data: {"object":"error","message":"engine dead","type":"InternalServerError","param":null,"code":500}` + "\n\n",
			kind:    metrics.FailureStream,
			errText: "stream error: engine dead",
			text:    " The café",
		},
		{
			name:    "error event",
			status:  200,
			body:    firstTwo + "event: error\ndata: overloaded\n\n",
			kind:    metrics.FailureStream,
			errText: "stream error event: overloaded",
			text:    " The café",
		},
		{
			name:    "invalid JSON",
			status:  200,
			body:    firstTwo + "data: {\"choices\": [\n\n",
			kind:    metrics.FailureStream,
			errText: "stream: invalid JSON",
			text:    " The café",
		},
		{
			name:    "truncated last event",
			status:  200,
			body:    firstTwo + events[2][:40],
			kind:    metrics.FailureStream,
			errText: "stream: invalid JSON",
			text:    " The café",
		},
		{
			name:    "no output chunk",
			status:  200,
			body:    events[len(events)-2] + "data: [DONE]\n\n",
			kind:    metrics.FailureStream,
			errText: errNoChunk,
		},
		{
			name:    "empty body",
			status:  200,
			kind:    metrics.FailureStream,
			errText: errNoChunk,
		},
		{
			name:    "HTTP 400 with vLLM error",
			status:  400,
			body:    `{"error":{"message":"This model's maximum context length is 2048 tokens.","type":"BadRequestError","param":null,"code":400}}`,
			kind:    metrics.FailureHTTPStatus,
			errText: "HTTP 400 Bad Request: This model's maximum context length is 2048 tokens.",
		},
		{
			name:    "HTTP 404 FastAPI detail",
			status:  404,
			body:    `{"detail":"Not Found"}`,
			kind:    metrics.FailureHTTPStatus,
			errText: "HTTP 404 Not Found: Not Found",
		},
		{
			name:    "HTTP 503 plain text",
			status:  503,
			body:    "upstream unavailable\n",
			kind:    metrics.FailureHTTPStatus,
			errText: "HTTP 503 Service Unavailable: upstream unavailable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newReplay(t, tt.status, []byte(tt.body), 3)
			rec := newClient(BackendOpenAI, srv.URL).Do(t.Context(), Request{Prompt: "hi", OutputLen: 8})
			if rec.Success {
				t.Fatalf("succeeded: %+v", rec)
			}
			if rec.Failure != tt.kind {
				t.Errorf("kind = %q, want %q (%s)", rec.Failure, tt.kind, rec.Error)
			}
			if !strings.HasPrefix(rec.Error, tt.errText) {
				t.Errorf("error = %q, want prefix %q", rec.Error, tt.errText)
			}
			if rec.GeneratedText != tt.text {
				t.Errorf("text = %q, want %q", rec.GeneratedText, tt.text)
			}
			if rec.HTTPStatus != tt.status {
				t.Errorf("status = %d, want %d", rec.HTTPStatus, tt.status)
			}
		})
	}
}

func TestReasoningChunks(t *testing.T) {
	const head = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":`
	const tail = `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
	body := head + `{"role":"assistant","content":""}` + tail +
		head + `{"reasoning_content":"Let me think"}` + tail +
		head + `{"reasoning_content":" more."}` + tail +
		head + `{"content":"42"}` + tail +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":15,"completion_tokens":10}}` + "\n\ndata: [DONE]\n\n"
	srv := newReplay(t, http.StatusOK, []byte(body), 9)
	rec := newClient(BackendOpenAIChat, srv.URL).Do(t.Context(), Request{Prompt: "q"})
	if !rec.Success || rec.GeneratedText != "42" || len(rec.ITL) != 2 || rec.OutputTokens != 10 {
		t.Errorf("success %v text %q itl %d tokens %d; want true, content only, 3 output chunks, 10", rec.Success, rec.GeneratedText, len(rec.ITL), rec.OutputTokens)
	}
}

// TestOutputTokensWithoutUsage counts tokens with the tokenizer when the
// server sends no usage, like vLLM's calculate_metrics.
func TestOutputTokensWithoutUsage(t *testing.T) {
	base := readFixture(t, "vllm-0.13-completions.sse")
	events := strings.SplitAfter(string(base), "\n\n")
	body := strings.Join(events[:8], "") + "data: [DONE]\n\n" // no usage chunk
	tok := llama3(t)
	srv := newReplay(t, http.StatusOK, []byte(body), 0)
	c := newClient(BackendOpenAI, srv.URL)
	rec := c.Do(t.Context(), Request{Prompt: "hi"})
	if !rec.Success || rec.OutputTokens != 0 {
		t.Fatalf("without tokenizer: success %v tokens %d, want true 0", rec.Success, rec.OutputTokens)
	}
	c = newClient(BackendOpenAI, srv.URL)
	c.Tokenizer = tok
	rec = c.Do(t.Context(), Request{Prompt: "hi"})
	want := tok.Count(completionsText)
	if want == 0 || rec.OutputTokens != want {
		t.Errorf("output tokens = %d, want %d (tokenizer count)", rec.OutputTokens, want)
	}
}

// TestTimesFollowServerPauses: the server pauses before each event, so
// by causality the k-th output chunk cannot arrive before k+1 pauses have
// passed since the request was sent (a bound that holds however late the
// client reads).
func TestTimesFollowServerPauses(t *testing.T) {
	const pause = 5 * time.Millisecond
	events := strings.SplitAfter(string(readFixture(t, "vllm-0.13-completions.sse")), "\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for _, ev := range events {
			time.Sleep(pause)
			_, _ = io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	rec := newClient(BackendOpenAI, srv.URL).Do(t.Context(), Request{Prompt: "hi"})
	if !rec.Success {
		t.Fatal(rec.Error)
	}
	checkTimings(t, rec)
	at := rec.TTFT
	for k := 0; ; k++ {
		if min := time.Duration(k+1) * pause; at < min {
			t.Errorf("output chunk %d arrived %v after the send, before the server's %v of pauses", k, at, min)
		}
		if k == len(rec.ITL) {
			break
		}
		at += rec.ITL[k]
	}
}

func TestChunkCountsEveryEventOnce(t *testing.T) {
	// One read holding all events must still time each event (they share
	// the read's timestamp) and count all of them.
	body := readFixture(t, "vllm-0.13-chat.sse")
	srv := newReplay(t, http.StatusOK, body, 0)
	rec := newClient(BackendOpenAIChat, srv.URL).Do(context.Background(), Request{Prompt: "hi"})
	if !rec.Success || len(rec.ITL) != 7 {
		t.Fatalf("success %v, itl %d", rec.Success, len(rec.ITL))
	}
	for _, g := range rec.ITL {
		if g != 0 {
			t.Errorf("events of one read got gap %v, want 0", g)
		}
	}
}

// TestPoolKeepsNoLargeBuffers: a stream with a 200 KB line and text hands
// back no buffer over maxPooledBytes, so one odd answer does not pin its
// memory in every later stream.
func TestPoolKeepsNoLargeBuffers(t *testing.T) {
	text := strings.Repeat("x", 200<<10)
	body := fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"text\":%q}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", text)
	srv := newReplay(t, http.StatusOK, []byte(body), 0)
	c := newClient(BackendOpenAI, srv.URL)
	rec := c.Do(t.Context(), Request{Prompt: "hi", OutputLen: 1000})
	if !rec.Success || len(rec.GeneratedText) != len(text) {
		t.Fatalf("success %v, %d text bytes: %s", rec.Success, len(rec.GeneratedText), rec.Error)
	}
	bufs := c.bufPool.Get().(*streamBufs)
	for name, b := range map[string][]byte{"read": bufs.read, "data": bufs.data, "text": bufs.text, "scratch": bufs.scratch} {
		if cap(b) > maxPooledBytes {
			t.Errorf("pooled %s buffer holds %d bytes, over %d", name, cap(b), maxPooledBytes)
		}
	}
}
