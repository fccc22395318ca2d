package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/tokenizer"
)

// testClient keeps connections alive across the many concurrent requests
// of the load tests.
var testClient = &http.Client{Transport: &http.Transport{MaxIdleConns: 2048, MaxIdleConnsPerHost: 2048}}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var (
	tkOnce sync.Once
	tkMap  = map[string]*tokenizer.Tokenizer{}
	tkErr  error
)

// realTokenizer loads a real tokenizer fixture once per test binary.
func realTokenizer(tb testing.TB, name string) *tokenizer.Tokenizer {
	tb.Helper()
	tkOnce.Do(func() {
		for _, n := range []string{fixtures.Llama3, fixtures.BERT} {
			path, err := fixtures.TokenizerPath(n)
			if err != nil {
				tkErr = err
				return
			}
			tk, err := tokenizer.FromFile(path)
			if err != nil {
				tkErr = err
				return
			}
			tkMap[n] = tk
		}
	})
	require.NoError(tb, tkErr)
	return tkMap[name]
}

// testParams is a small fast profile with a constant step time.
func testParams() Params {
	p := DefaultParams()
	p.Model = "sim-test"
	p.StepFixedMS, p.PrefillTokenUS, p.SeqUS, p.ContextTokenNS = 2, 0, 0, 0
	return p
}

// start runs a simulator behind an httptest server, Llama-3 tokenizer
// unless cfg has one.
func start(tb testing.TB, cfg Config) (*Server, string) {
	tb.Helper()
	if cfg.Tokenizer == nil {
		cfg.Tokenizer = realTokenizer(tb, fixtures.Llama3)
	}
	s, err := New(cfg)
	require.NoError(tb, err)
	hs := httptest.NewServer(s)
	tb.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		s.Close()
	})
	return s, hs.URL
}

// event is one server-sent event as a client saw it.
type event struct {
	data string
	at   time.Duration // since the request was sent
}

// streamResult is what a minimal SSE client read from one request.
type streamResult struct {
	status int
	header http.Header
	events []event
	body   []byte // the whole body when not a stream
	err    error  // transport error while reading
}

// post sends a JSON body and reads the response as SSE when it is one.
func post(ctx context.Context, url string, body any, header map[string]string) streamResult {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return streamResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	t0 := time.Now()
	resp, err := testClient.Do(req)
	if err != nil {
		return streamResult{err: err}
	}
	defer resp.Body.Close()
	r := streamResult{status: resp.StatusCode, header: resp.Header}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.body, r.err = io.ReadAll(resp.Body)
		return r
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok && strings.HasSuffix(line, "\n") {
			r.events = append(r.events, event{data: data, at: time.Since(t0)})
		}
		if err != nil {
			if err != io.EOF {
				r.err = err
			}
			return r
		}
	}
}

// done reports whether the stream ended with [DONE].
func (r streamResult) done() bool {
	return len(r.events) > 0 && r.events[len(r.events)-1].data == "[DONE]"
}

// content returns the events that carry output text, with their text.
func (r streamResult) content(tb testing.TB) (texts []string, at []time.Duration) {
	tb.Helper()
	for _, e := range r.events {
		if e.data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Text  *string `json:"text"`
				Delta *struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(tb, json.Unmarshal([]byte(e.data), &c), e.data)
		if len(c.Choices) == 0 {
			continue
		}
		ch := c.Choices[0]
		var t string
		switch {
		case ch.Text != nil:
			t = *ch.Text
		case ch.Delta != nil && ch.Delta.Content != nil:
			t = *ch.Delta.Content
		}
		if t == "" {
			continue
		}
		texts = append(texts, t)
		at = append(at, e.at)
	}
	return texts, at
}

// ttft is the time to the first content event.
func (r streamResult) ttft(tb testing.TB) time.Duration {
	tb.Helper()
	_, at := r.content(tb)
	require.NotEmpty(tb, at, "no content in %v", r.events)
	return at[0]
}

func completionBody(prompt string, maxTokens int, stream bool) map[string]any {
	return map[string]any{"prompt": prompt, "max_tokens": maxTokens, "ignore_eos": true, "stream": stream}
}

// words makes a prompt of n distinct-ish words, seeded by k.
func words(n, k int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(" ")
		b.WriteString(wordList[(i*7+k*13)%len(wordList)])
	}
	return b.String()
}
