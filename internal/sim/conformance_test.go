package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

var createdRe = regexp.MustCompile(`"created":\d+`)

// TestGolden pins every endpoint's exact bytes (with "created" zeroed).
// The golden files were checked field by field against vLLM v0.13's
// protocol.py and serving_*.py (see testdata/README.md); -update rewrites
// them.
func TestGolden(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 25 // long enough that no two tokens share a chunk
	srv, base := start(t, Config{Params: &p})
	msgs := []map[string]string{{"role": "user", "content": "Say hi."}}
	cases := []struct {
		name, path string
		body       any
		header     map[string]string
		method     string
	}{
		{name: "completion_stream", path: "/v1/completions", body: map[string]any{"model": "sim-test", "prompt": "Hello world", "max_tokens": 4, "stream": true, "stream_options": map[string]any{"include_usage": true}}},
		{name: "completion_stream_continuous", path: "/v1/completions", body: map[string]any{"prompt": "Hello world", "max_tokens": 3, "stream": true, "stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}},
		{name: "completion_stream_plain", path: "/v1/completions", body: map[string]any{"prompt": "Hello world", "max_tokens": 2, "stream": true}},
		{name: "chat_stream", path: "/v1/chat/completions", body: map[string]any{"model": "sim-test", "messages": msgs, "max_tokens": 3, "stream": true, "stream_options": map[string]any{"include_usage": true}}},
		{name: "chat_stream_continuous", path: "/v1/chat/completions", body: map[string]any{"messages": msgs, "max_completion_tokens": 2, "stream": true, "stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}}},
		{name: "completion", path: "/v1/completions", body: map[string]any{"prompt": "Hello world", "max_tokens": 3}},
		{name: "chat", path: "/v1/chat/completions", body: map[string]any{"messages": msgs, "max_tokens": 3}},
		{name: "embeddings", path: "/v1/embeddings", body: map[string]any{"input": []string{"a cat", "a dog"}, "dimensions": 3}},
		{name: "rerank", path: "/rerank", body: map[string]any{"query": "big cat", "documents": []string{"a small dog", "the big cat"}}},
		{name: "models", path: "/v1/models", method: http.MethodGet},
		{name: "version", path: "/version", method: http.MethodGet},
		{name: "error_model", path: "/v1/completions", body: map[string]any{"model": "gpt-4", "prompt": "x"}},
		{name: "error_too_long", path: "/v1/completions", body: map[string]any{"prompt": "x", "max_tokens": 5000}},
		{name: "error_json", path: "/v1/chat/completions", body: "not an object"},
		{name: "error_fault_header", path: "/v1/completions", body: map[string]any{"prompt": "x"}, header: map[string]string{FaultHeader: "explode=1"}},
		{name: "fault_stream_error", path: "/v1/completions", body: map[string]any{"prompt": "x", "max_tokens": 5, "stream": true}, header: map[string]string{FaultHeader: "error_after=2"}},
		{name: "fault_status", path: "/v1/completions", body: map[string]any{"prompt": "x"}, header: map[string]string{FaultHeader: "status=503"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{"X-Request-Id": "golden-" + c.name}
			for k, v := range c.header {
				hdr[k] = v
			}
			got := unmerged(t, srv, func() string { return fetchRaw(t, c.method, base+c.path, c.body, hdr) })
			got = createdRe.ReplaceAllString(got, `"created":0`)
			golden := filepath.Join("testdata", c.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -run TestGolden -update to create it")
			require.Equal(t, string(want), got)
		})
	}
}

// fetchRaw returns "<status> <content-type>\n<body>".
var idRe = regexp.MustCompile(`"id":"([^"]+)"`)

// unmerged runs fetch until the server's ground truth shows one token per
// chunk (up to 5 tries): on a machine so loaded that a writer fell a whole
// step behind, tokens share a chunk, as in vLLM, and the bytes differ.
func unmerged(tb testing.TB, srv *Server, fetch func() string) string {
	tb.Helper()
	var got string
	for range 5 {
		got = fetch()
		m := idRe.FindStringSubmatch(got)
		if m == nil || !strings.Contains(got, "data: ") {
			return got // not a stream: one body, one "chunk"
		}
		tr, ok := srv.Truth(m[1])
		if !ok || !slices.ContainsFunc(tr.ChunkTokens, func(n int) bool { return n > 1 }) {
			return got
		}
		tb.Logf("tokens merged into one chunk (%v); retrying", tr.ChunkTokens)
	}
	return got
}

func fetchRaw(tb testing.TB, method, url string, body any, header map[string]string) string {
	tb.Helper()
	if method == "" {
		method = http.MethodPost
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(tb, err)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	require.NoError(tb, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return fmt.Sprintf("%d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
}

// TestStreamShape checks the structure every vLLM client relies on, for
// both endpoints: chat's role-only first chunk, one token per chunk, the
// finish reason on the last content chunk only, the usage chunk with empty
// choices, then [DONE].
func TestStreamShape(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 20
	srv, base := start(t, Config{Params: &p})
	for _, chat := range []bool{false, true} {
		t.Run(fmt.Sprint("chat=", chat), func(t *testing.T) {
			body := completionBody("Tell me a story about a cat.", 7, true)
			path := "/v1/completions"
			if chat {
				delete(body, "prompt")
				body["messages"] = []map[string]string{{"role": "user", "content": "Tell me a story."}}
				path = "/v1/chat/completions"
			}
			body["stream_options"] = map[string]any{"include_usage": true}
			r := post(context.Background(), base+path, body, map[string]string{"X-Request-Id": fmt.Sprint("shape-", chat)})
			require.NoError(t, r.err)
			require.Equal(t, 200, r.status)
			truth, ok := srv.Truth(fmt.Sprint("shape-", chat))
			require.True(t, ok)
			require.Equal(t, "text/event-stream; charset=utf-8", r.header.Get("Content-Type"))
			require.True(t, r.done())
			var chunks []map[string]any
			for _, e := range r.events[:len(r.events)-1] {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(e.data), &m))
				chunks = append(chunks, m)
			}
			first := 0
			if chat {
				delta := chunks[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
				require.Equal(t, map[string]any{"role": "assistant", "content": "", "reasoning_content": nil}, delta)
				first = 1
			}
			content := chunks[first : len(chunks)-1]
			// One chunk per step's token, unless the writer fell behind and
			// merged some (as vLLM does); the server's record says which.
			require.Len(t, content, len(truth.ChunkTokens))
			sum := 0
			for _, n := range truth.ChunkTokens {
				sum += n
			}
			require.Equal(t, 7, sum)
			for i, c := range content {
				choice := c["choices"].([]any)[0].(map[string]any)
				if i == len(content)-1 {
					require.Equal(t, "length", choice["finish_reason"])
				} else {
					require.Nil(t, choice["finish_reason"])
				}
			}
			last := chunks[len(chunks)-1]
			require.Empty(t, last["choices"])
			u := last["usage"].(map[string]any)
			require.EqualValues(t, 7, u["completion_tokens"])
			require.EqualValues(t, u["prompt_tokens"].(float64)+7, u["total_tokens"])
		})
	}
}

// TestTokenCounts: a client that tokenizes the streamed text with the
// server's tokenizer counts exactly the tokens the server says it sent.
func TestTokenCounts(t *testing.T) {
	for _, name := range []string{fixtures.Llama3, fixtures.BERT} {
		t.Run(name, func(t *testing.T) {
			tk := realTokenizer(t, name)
			p := testParams()
			p.StepFixedMS = 0
			p.EOSMinRatio = 0.3
			_, base := start(t, Config{Params: &p, Tokenizer: tk})
			for i := range 20 {
				body := completionBody(words(30, i), 5+i*7, true)
				delete(body, "ignore_eos")
				body["stream_options"] = map[string]any{"include_usage": true}
				r := post(context.Background(), base+"/v1/completions", body, nil)
				require.NoError(t, r.err)
				texts, _ := r.content(t)
				var u struct {
					Usage struct {
						PromptTokens     int `json:"prompt_tokens"`
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.events[len(r.events)-2].data), &u))
				require.Equal(t, u.Usage.CompletionTokens, tk.Count(strings.Join(texts, "")), "request %d", i)
				require.Equal(t, len(tk.Encode(words(30, i), true)), u.Usage.PromptTokens)
				require.LessOrEqual(t, u.Usage.CompletionTokens, 5+i*7)
			}
		})
	}
}

// TestDeterministic: the same seed and request id give the same text; a
// different seed gives another.
func TestDeterministic(t *testing.T) {
	text := func(seed int64) string {
		p := testParams()
		p.StepFixedMS = 0
		p.Seed = seed
		_, base := start(t, Config{Params: &p})
		r := post(context.Background(), base+"/v1/completions", completionBody("Hi", 12, true), map[string]string{"X-Request-Id": "same"})
		texts, _ := r.content(t)
		return strings.Join(texts, "")
	}
	a, b, c := text(1), text(1), text(2)
	require.Equal(t, a, b)
	require.NotEqual(t, a, c)
}

// TestDefaults: vLLM's defaults for fields a request leaves out.
func TestDefaults(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 0
	p.DefaultMaxTokens = 9
	_, base := start(t, Config{Params: &p})
	usageOf := func(path string, body map[string]any) map[string]any {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true, "continuous_usage_stats": true}
		r := post(context.Background(), base+path, body, nil)
		require.NoError(t, r.err)
		var u map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.events[len(r.events)-2].data), &u))
		return u["usage"].(map[string]any)
	}
	require.EqualValues(t, 16, usageOf("/v1/completions", map[string]any{"prompt": "Hi"})["completion_tokens"], "completions default to 16")
	require.EqualValues(t, 9, usageOf("/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}}})["completion_tokens"], "chat defaults to default_max_tokens")

	// continuous_usage_stats without include_usage adds no usage anywhere.
	r := post(context.Background(), base+"/v1/completions", map[string]any{"prompt": "Hi", "max_tokens": 2, "stream": true,
		"stream_options": map[string]any{"continuous_usage_stats": true}}, nil)
	for _, e := range r.events[:len(r.events)-1] {
		require.Contains(t, e.data, `"usage":null`)
	}
}

// TestVocabulary: the generated words are plain, inoffensive, and each one
// token for the tokenizer.
func TestVocabulary(t *testing.T) {
	tk := realTokenizer(t, fixtures.Llama3)
	v := newVocab(tk)
	require.Len(t, v.ids, maxVocab)
	for _, id := range v.ids {
		w := v.texts[id]
		require.False(t, offensive(w), w)
		require.Equal(t, []int{id}, tk.Encode(w, false), w)
	}
}

// TestOutputLengths: ignore_eos gives exactly max_tokens; without it the
// length is uniform in [eos_min_ratio*max_tokens, max_tokens], and a short
// one finishes with "stop".
func TestOutputLengths(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 0
	p.EOSMinRatio = 0.5
	_, base := start(t, Config{Params: &p})
	counts := map[int]int{}
	for i := range 200 {
		body := map[string]any{"prompt": "Hi", "max_tokens": 20, "stream": true, "stream_options": map[string]any{"include_usage": true}}
		if i%2 == 0 {
			body["ignore_eos"] = true
		}
		r := post(context.Background(), base+"/v1/completions", body, nil)
		require.True(t, r.done())
		var fin, use struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.events[len(r.events)-3].data), &fin))
		require.NoError(t, json.Unmarshal([]byte(r.events[len(r.events)-2].data), &use))
		n := use.Usage.CompletionTokens
		if i%2 == 0 {
			require.Equal(t, 20, n)
			continue
		}
		counts[n]++
		require.GreaterOrEqual(t, n, 10)
		require.LessOrEqual(t, n, 20)
		want := "stop"
		if n == 20 {
			want = "length"
		}
		require.Equal(t, want, *fin.Choices[0].FinishReason)
	}
	require.Greater(t, len(counts), 6, "lengths spread over the range: %v", counts)
}
