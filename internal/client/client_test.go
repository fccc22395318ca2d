package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/metrics"
)

func ptr[T any](v T) *T { return &v }

// canon re-encodes a decoded payload so maps compare as sorted JSON.
func canon(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func TestPayloads(t *testing.T) {
	tests := []struct {
		name    string
		backend string
		setup   func(c *Client)
		req     Request
		want    string
	}{
		{
			name:    "completions defaults",
			backend: BackendOpenAI,
			req:     Request{Prompt: "Hello", OutputLen: 16},
			want:    `{"logprobs":null,"max_tokens":16,"model":"meta-llama/Llama-3.2-1B-Instruct","prompt":"Hello","repetition_penalty":1,"stream":true,"stream_options":{"include_usage":true},"temperature":0}`,
		},
		{
			name:    "completions with everything",
			backend: BackendVLLM,
			setup: func(c *Client) {
				c.ModelName = "served"
				c.IgnoreEOS = true
				c.Logprobs = ptr(3)
				c.Sampling = Sampling{Temperature: ptr(0.7), TopP: ptr(0.9), TopK: ptr(40), MinP: ptr(0.05), RepetitionPenalty: ptr(1.1)}
				c.ExtraBody = map[string]any{"temperature": 0.2, "seed": 7}
			},
			req:  Request{Prompt: "Hello", OutputLen: 16},
			want: `{"ignore_eos":true,"logprobs":3,"max_tokens":16,"min_p":0.05,"model":"served","prompt":"Hello","repetition_penalty":1.1,"seed":7,"stream":true,"stream_options":{"include_usage":true},"temperature":0.2,"top_k":40,"top_p":0.9}`,
		},
		{
			name:    "chat",
			backend: BackendOpenAIChat,
			req:     Request{Prompt: "Hi there", OutputLen: 5, Model: "lora-a"},
			want:    `{"max_completion_tokens":5,"messages":[{"content":[{"text":"Hi there","type":"text"}],"role":"user"}],"model":"lora-a","stream":true,"stream_options":{"include_usage":true},"temperature":0}`,
		},
		{
			name:    "embeddings",
			backend: BackendOpenAIEmbeddings,
			setup:   func(c *Client) { c.ExtraBody = map[string]any{"dimensions": 64} },
			req:     Request{Prompt: "embed me"},
			want:    `{"dimensions":64,"input":"embed me","model":"meta-llama/Llama-3.2-1B-Instruct","truncate_prompt_tokens":-1}`,
		},
		{
			name:    "batched embeddings",
			backend: BackendOpenAIEmbeddings,
			req:     Request{Prompt: "ignored", Inputs: []string{"q", "d1", "d2"}},
			want:    `{"input":["q","d1","d2"],"model":"meta-llama/Llama-3.2-1B-Instruct","truncate_prompt_tokens":-1}`,
		},
		{
			name:    "rerank ignores extra body",
			backend: BackendVLLMRerank,
			setup:   func(c *Client) { c.ExtraBody = map[string]any{"x": 1}; c.IgnoreEOS = true },
			req:     Request{Prompt: "query", Documents: []string{"a", "b"}},
			want:    `{"documents":["a","b"],"model":"meta-llama/Llama-3.2-1B-Instruct","query":"query","truncate_prompt_tokens":-1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := readFixture(t, "vllm-0.13-chat.sse")
			if IsPooling(tt.backend) {
				body = []byte(`{"usage":{"prompt_tokens":3}}`)
			}
			srv := newReplay(t, http.StatusOK, body, 0)
			c := newClient(tt.backend, srv.URL)
			if tt.setup != nil {
				tt.setup(c)
			}
			c.Do(t.Context(), tt.req)
			_, p := srv.seen()
			if got := canon(t, p); got != tt.want {
				t.Errorf("payload\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	body := readFixture(t, "vllm-0.13-chat.sse")
	srv := newReplay(t, http.StatusOK, body, 0)
	c := newClient(BackendOpenAIChat, srv.URL)
	c.Headers = map[string]string{"X-Tenant": "a", "x-request-id": "overridden"}

	t.Setenv("OPENAI_API_KEY", "")
	c.Do(t.Context(), Request{Prompt: "p", RequestID: "req-9"})
	r, _ := srv.seen()
	if r.Header.Get("Authorization") != "" {
		t.Errorf("Authorization sent without a key: %q", r.Header.Get("Authorization"))
	}
	if r.Header.Get("x-request-id") != "req-9" || r.Header.Get("X-Tenant") != "a" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", r.Header)
	}

	t.Setenv("OPENAI_API_KEY", "sk-test")
	c.Do(t.Context(), Request{Prompt: "p"})
	r, _ = srv.seen()
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization %q", got)
	}
	if got := r.Header.Get("x-request-id"); got != "overridden" {
		t.Errorf("without a request id the extra header stays: %q", got)
	}
}

func TestPooling(t *testing.T) {
	for _, backend := range []string{BackendOpenAIEmbeddings, BackendVLLMRerank} {
		t.Run(backend, func(t *testing.T) {
			srv := newReplay(t, http.StatusOK, []byte(`{"id":"embd-1","object":"list","data":[{"index":0,"object":"embedding","embedding":[0.1,0.2]}],"usage":{"prompt_tokens":9,"total_tokens":9}}`), 16)
			rec := newClient(backend, srv.URL).Do(t.Context(), Request{Prompt: "q", Documents: []string{"d"}, PromptLen: 4})
			if !rec.Success || rec.ServerPromptTokens != 9 || rec.PromptLen != 4 {
				t.Fatalf("record %+v", rec)
			}
			if rec.TTFT != rec.Latency || rec.Latency <= 0 {
				t.Errorf("ttft %v latency %v, want equal and positive", rec.TTFT, rec.Latency)
			}
			if rec.InputLen(true) != 9 {
				t.Errorf("input len %d", rec.InputLen(true))
			}
		})
	}
	srv := newReplay(t, http.StatusOK, []byte(`not json`), 0)
	rec := newClient(BackendOpenAIEmbeddings, srv.URL).Do(t.Context(), Request{Prompt: "q"})
	if rec.Success || rec.Failure != metrics.FailureStream {
		t.Errorf("bad body: %+v", rec)
	}
}

func TestTransportFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		rec := newClient(BackendOpenAI, "http://"+addr).Do(t.Context(), Request{Prompt: "p"})
		if rec.Failure != metrics.FailureTransport || !strings.Contains(rec.Error, "refused") {
			t.Errorf("kind %q error %q", rec.Failure, rec.Error)
		}
	})
	t.Run("connection reset mid-stream", func(t *testing.T) {
		body := readFixture(t, "vllm-0.13-completions.sse")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = io.WriteString(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
			half := body[:len(body)/2]
			_, _ = fmt.Fprintf(buf, "%x\r\n", len(half))
			_, _ = buf.Write(half)
			_, _ = buf.WriteString("\r\n")
			_ = buf.Flush()
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // RST instead of FIN
			}
			conn.Close()
		}))
		defer srv.Close()
		rec := newClient(BackendOpenAI, srv.URL).Do(t.Context(), Request{Prompt: "p"})
		if rec.Success || rec.Failure != metrics.FailureTransport {
			t.Fatalf("kind %q error %q", rec.Failure, rec.Error)
		}
		if rec.GeneratedText == "" || rec.TTFT <= 0 {
			t.Errorf("partial output lost: text %q ttft %v", rec.GeneratedText, rec.TTFT)
		}
	})
	t.Run("request timeout", func(t *testing.T) {
		srv := stallServer(t)
		c := newClient(BackendOpenAI, srv.URL)
		c.Timeout = 50 * time.Millisecond
		rec := c.Do(t.Context(), Request{Prompt: "p"})
		if rec.Failure != metrics.FailureTimeout || !strings.HasPrefix(rec.Error, "timeout after 50ms") {
			t.Errorf("kind %q error %q", rec.Failure, rec.Error)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		srv := stallServer(t)
		c := newClient(BackendOpenAI, srv.URL)
		c.Timeout = time.Minute
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(30*time.Millisecond, cancel)
		rec := c.Do(ctx, Request{Prompt: "p"})
		if rec.Failure != metrics.FailureCanceled || !strings.HasPrefix(rec.Error, "canceled") {
			t.Errorf("kind %q error %q", rec.Failure, rec.Error)
		}
	})
}

// stallServer sends the headers and one chunk, then stalls until the
// client goes away.
func stallServer(tb testing.TB) *httptest.Server {
	tb.Helper()
	body := readFixture(tb, "vllm-0.13-completions.sse")
	first := body[:strings.Index(string(body), "\n\n")+2]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(first)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	tb.Cleanup(srv.Close)
	return srv
}

func TestCheckEndpoint(t *testing.T) {
	tests := []struct {
		backend, url string
		ok           bool
	}{
		{BackendOpenAI, "http://h/v1/completions", true},
		{BackendOpenAIChat, "http://h/v1/chat/completions", true},
		{BackendOpenAIChat, "http://h/v1/completions", false},
		{BackendOpenAIEmbeddings, "http://h/v1/embeddings", true},
		{BackendVLLMRerank, "http://h/rerank", true},
		{BackendOpenAI, "http://h/start_profile", true},
		{"tgi", "http://h/generate", false},
	}
	for _, tt := range tests {
		if err := CheckEndpoint(tt.backend, tt.url); (err == nil) != tt.ok {
			t.Errorf("CheckEndpoint(%s, %s) = %v", tt.backend, tt.url, err)
		}
	}
}
