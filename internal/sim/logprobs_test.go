package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/client"
)

// wireChunk is what these tests read of a chunk or a non-streamed answer.
type wireChunk struct {
	Choices []struct {
		Index int     `json:"index"`
		Text  *string `json:"text"`
		Delta *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Message *struct {
			Content string `json:"content"`
		} `json:"message"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

type wireCompletionLogprobs struct {
	TextOffset    []int             `json:"text_offset"`
	TokenLogprobs []float64         `json:"token_logprobs"`
	Tokens        []string          `json:"tokens"`
	TopLogprobs   []json.RawMessage `json:"top_logprobs"`
}

type wireChatLogprob struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	Bytes       []int   `json:"bytes"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Bytes   []int   `json:"bytes"`
	} `json:"top_logprobs"`
}

type entry struct {
	token string
	lp    float64
}

// orderedDict reads a JSON object's entries in order (a Go map would lose
// it), failing on a repeated key.
func orderedDict(tb testing.TB, raw []byte) []entry {
	tb.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	tok, err := d.Token()
	require.NoError(tb, err)
	require.Equal(tb, json.Delim('{'), tok, string(raw))
	var out []entry
	seen := map[string]bool{}
	for d.More() {
		k, err := d.Token()
		require.NoError(tb, err)
		var v float64
		require.NoError(tb, d.Decode(&v))
		require.False(tb, seen[k.(string)], "repeated key %q in %s", k, raw)
		seen[k.(string)] = true
		out = append(out, entry{k.(string), v})
	}
	return out
}

func decodeChunks(tb testing.TB, r streamResult) []wireChunk {
	tb.Helper()
	require.NoError(tb, r.err)
	require.Equal(tb, 200, r.status, string(r.body))
	require.True(tb, r.done(), "no [DONE]")
	var out []wireChunk
	for _, e := range r.events[:len(r.events)-1] {
		var c wireChunk
		require.NoError(tb, json.Unmarshal([]byte(e.data), &c), e.data)
		out = append(out, c)
	}
	return out
}

func finite(lp float64) bool { return lp < 0 && !math.IsInf(lp, 0) && !math.IsNaN(lp) }

// checkCompletionLogprobs checks one choice's logprobs against its text:
// one entry per token, the tokens spell the text, text_offset counts the
// characters before each token (from offset, the characters sent before),
// each top_logprobs dict holds the sampled token first with its logprob,
// then the top k without it in falling order: k+1 entries when it is not
// among them (and then no likelier than any), else k. It returns the
// number of tokens and how many dicts had k+1 entries.
func checkCompletionLogprobs(tb testing.TB, raw json.RawMessage, text string, k, offset int, greedy bool) (int, int) {
	tb.Helper()
	var lp wireCompletionLogprobs
	require.NoError(tb, json.Unmarshal(raw, &lp), string(raw))
	n := len(lp.Tokens)
	require.Positive(tb, n)
	require.Len(tb, lp.TextOffset, n)
	require.Len(tb, lp.TokenLogprobs, n)
	require.Len(tb, lp.TopLogprobs, n)
	require.Equal(tb, text, strings.Join(lp.Tokens, ""), "the tokens spell the chunk's text")
	extra := 0
	for i, tok := range lp.Tokens {
		require.Equal(tb, offset, lp.TextOffset[i], "text_offset of %q", tok)
		offset += utf8.RuneCountInString(tok)
		require.True(tb, finite(lp.TokenLogprobs[i]), "logprob %v", lp.TokenLogprobs[i])
		d := orderedDict(tb, lp.TopLogprobs[i])
		require.Equal(tb, entry{tok, lp.TokenLogprobs[i]}, d[0], "the sampled token comes first")
		alts := d[1:]
		for a := range alts {
			require.NotEqual(tb, tok, alts[a].token)
			require.True(tb, finite(alts[a].lp))
			if a > 0 {
				require.LessOrEqual(tb, alts[a].lp, alts[a-1].lp, "alternatives in rank order")
			}
		}
		switch len(d) {
		case k + 1:
			extra++
			require.False(tb, greedy, "a greedy sample is the most likely token")
			if k > 0 {
				require.LessOrEqual(tb, d[0].lp, alts[k-1].lp, "not among the top k: below all of them")
			}
		case k:
		default:
			require.Failf(tb, "wrong number of entries", "%d entries for logprobs=%d: %s", len(d), k, lp.TopLogprobs[i])
		}
		if greedy && len(alts) > 0 {
			require.GreaterOrEqual(tb, d[0].lp, alts[0].lp)
		}
	}
	return n, extra
}

// TestCompletionLogprobsStream: logprobs in every chunk of a streamed
// completion, consistent with its text and usage, both when the sampled
// token is among the top k and when it is not.
func TestCompletionLogprobsStream(t *testing.T) {
	_, base := start(t, Config{Params: ptrParams(testParams())})
	for _, c := range []struct {
		k      int
		temp   float64
		greedy bool
	}{{0, 1, false}, {3, 1, false}, {5, 0, true}, {20, 0.7, false}} {
		body := completionBody("Tell me a story.", 40, true)
		body["logprobs"], body["temperature"], body["seed"] = c.k, c.temp, 11
		body["stream_options"] = map[string]any{"include_usage": true}
		chunks := decodeChunks(t, post(context.Background(), base+"/v1/completions", body, nil))
		tokens, extra, offset := 0, 0, 0
		for _, ch := range chunks[:len(chunks)-1] {
			require.Len(t, ch.Choices, 1)
			text := *ch.Choices[0].Text
			n, e := checkCompletionLogprobs(t, ch.Choices[0].Logprobs, text, c.k, offset, c.greedy)
			tokens += n
			extra += e
			offset += utf8.RuneCountInString(text)
		}
		last := chunks[len(chunks)-1]
		require.Empty(t, last.Choices)
		require.Equal(t, 40, last.Usage.CompletionTokens)
		require.Equal(t, 40, tokens, "one logprobs entry per token")
		if !c.greedy && c.k > 0 && c.k < 10 {
			require.Positive(t, extra, "k=%d: some sampled tokens fall outside the top k", c.k)
			require.Less(t, extra, 40, "k=%d: most are among them", c.k)
		}
	}
}

// TestCompletionLogprobsStable: a token's logprobs depend on the seed and
// its position only, not on how the tokens were chunked, whether the
// request was streamed, nor on k (a larger k extends the list).
func TestCompletionLogprobsStable(t *testing.T) {
	_, base := start(t, Config{Params: ptrParams(testParams())})
	get := func(stream bool, k int) wireCompletionLogprobs {
		body := completionBody("Once upon a time", 12, stream)
		body["logprobs"], body["seed"] = k, 5
		var all wireCompletionLogprobs
		add := func(raw json.RawMessage) {
			var lp wireCompletionLogprobs
			require.NoError(t, json.Unmarshal(raw, &lp))
			all.TextOffset = append(all.TextOffset, lp.TextOffset...)
			all.TokenLogprobs = append(all.TokenLogprobs, lp.TokenLogprobs...)
			all.Tokens = append(all.Tokens, lp.Tokens...)
			all.TopLogprobs = append(all.TopLogprobs, lp.TopLogprobs...)
		}
		r := post(context.Background(), base+"/v1/completions", body, nil)
		if !stream {
			require.Equal(t, 200, r.status, string(r.body))
			var c wireChunk
			require.NoError(t, json.Unmarshal(r.body, &c))
			require.Len(t, c.Choices, 1)
			checkCompletionLogprobs(t, c.Choices[0].Logprobs, *c.Choices[0].Text, k, 0, false)
			add(c.Choices[0].Logprobs)
			return all
		}
		for _, ch := range decodeChunks(t, r) {
			add(ch.Choices[0].Logprobs)
		}
		return all
	}
	streamed, whole := get(true, 2), get(false, 2)
	require.Equal(t, whole, streamed)
	more := get(false, 4)
	require.Equal(t, whole.Tokens, more.Tokens)
	require.Equal(t, whole.TokenLogprobs, more.TokenLogprobs)
	for i := range whole.TopLogprobs {
		a, b := orderedDict(t, whole.TopLogprobs[i]), orderedDict(t, more.TopLogprobs[i])
		require.Equal(t, a, b[:len(a)], "k=4 extends k=2's list")
	}
}

// TestChatLogprobs: chat's logprobs, streamed and not: one content entry
// per token, its bytes the token's UTF-8, top_logprobs k entries with the
// sampled token first; the role chunk has none; top_logprobs 0 gives empty
// lists, and logprobs true with top_logprobs null gives no logprobs at all,
// as in vLLM.
func TestChatLogprobs(t *testing.T) {
	_, base := start(t, Config{Params: ptrParams(testParams())})
	chat := func(stream bool, extra map[string]any) streamResult {
		body := map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}},
			"max_completion_tokens": 9, "ignore_eos": true, "stream": stream}
		for k, v := range extra {
			body[k] = v
		}
		return post(context.Background(), base+"/v1/chat/completions", body, nil)
	}
	check := func(raw json.RawMessage, text string, k int) int {
		var lp struct {
			Content []wireChatLogprob `json:"content"`
		}
		require.NoError(t, json.Unmarshal(raw, &lp), string(raw))
		var b strings.Builder
		for _, c := range lp.Content {
			b.WriteString(c.Token)
			require.Equal(t, bytesOf(c.Token), c.Bytes)
			require.True(t, finite(c.Logprob))
			require.Len(t, c.TopLogprobs, k)
			if k > 0 {
				require.Equal(t, c.Token, c.TopLogprobs[0].Token, "the sampled token first")
				require.Equal(t, c.Logprob, c.TopLogprobs[0].Logprob)
			}
			seen := map[string]bool{}
			for _, a := range c.TopLogprobs {
				require.Equal(t, bytesOf(a.Token), a.Bytes)
				require.True(t, finite(a.Logprob))
				require.False(t, seen[a.Token], "repeated %q", a.Token)
				seen[a.Token] = true
			}
		}
		require.Equal(t, text, b.String())
		return len(lp.Content)
	}
	for _, k := range []int{0, 1, 4} {
		chunks := decodeChunks(t, chat(true, map[string]any{"logprobs": true, "top_logprobs": k, "temperature": 1}))
		require.NotNil(t, chunks[0].Choices[0].Delta)
		require.Equal(t, "assistant", chunks[0].Choices[0].Delta.Role)
		require.Equal(t, "null", string(chunks[0].Choices[0].Logprobs), "the role chunk has no logprobs")
		tokens := 0
		for _, ch := range chunks[1:] {
			tokens += check(ch.Choices[0].Logprobs, *ch.Choices[0].Delta.Content, k)
		}
		require.Equal(t, 9, tokens)

		r := chat(false, map[string]any{"logprobs": true, "top_logprobs": k})
		require.Equal(t, 200, r.status, string(r.body))
		var c wireChunk
		require.NoError(t, json.Unmarshal(r.body, &c))
		require.Equal(t, 9, check(c.Choices[0].Logprobs, c.Choices[0].Message.Content, k))
	}
	r := chat(false, map[string]any{"logprobs": true})
	require.Contains(t, string(r.body), `"top_logprobs":[]`, "top_logprobs defaults to 0")
	for _, extra := range []map[string]any{nil, {"logprobs": false}, {"logprobs": true, "top_logprobs": nil}} {
		r := chat(false, extra)
		require.Equal(t, 200, r.status, string(r.body))
		require.Contains(t, string(r.body), `"logprobs":null`, "%v", extra)
		require.NotContains(t, string(r.body), `"content":[`, "%v", extra)
	}
}

func bytesOf(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

// TestPyFloat: floats are written as Python writes them.
func TestPyFloat(t *testing.T) {
	for f, want := range map[float64]string{
		-11.761783599853516: "-11.761783599853516",
		-9999:               "-9999.0",
		-1:                  "-1.0",
		0:                   "0.0",
		-0.5:                "-0.5",
		-0.0001:             "-0.0001",
		-1.5e-07:            "-1.5e-07",
		1e16:                "1e+16",
	} {
		require.Equal(t, want, string(pyFloat(f).append(nil)), "%v", f)
	}
}

// TestSamplingErrors: vLLM's answers to logprobs, n and temperature it
// refuses, message for message (protocol.py's validators, SamplingParams,
// the input processor's max_logprobs of 20).
func TestSamplingErrors(t *testing.T) {
	_, base := start(t, Config{Params: ptrParams(testParams())})
	vocab := realTokenizer(t, fixtures.Llama3).VocabSize()
	const badRequest, validation = "BadRequestError", "Bad Request"
	cases := []struct {
		chat  bool
		extra map[string]any
		typ   string
		msg   string
	}{
		{true, map[string]any{"top_logprobs": 2}, validation, "when using `top_logprobs`, `logprobs` must be set to true."},
		{true, map[string]any{"logprobs": false, "top_logprobs": -1}, validation, "when using `top_logprobs`, `logprobs` must be set to true."},
		{true, map[string]any{"logprobs": true, "top_logprobs": -2}, validation, "`top_logprobs` must be a positive value or -1."},
		{true, map[string]any{"logprobs": true, "top_logprobs": 21}, badRequest, "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{true, map[string]any{"logprobs": true, "top_logprobs": -1}, badRequest, "Requested sample logprobs of " + itoa(vocab) + ", which is greater than max allowed: 20"},
		{false, map[string]any{"logprobs": -1}, validation, "`logprobs` must be a positive value."},
		{false, map[string]any{"logprobs": 21}, badRequest, "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{false, map[string]any{"n": 2, "temperature": 0}, badRequest, "n must be 1 when using greedy sampling, got 2."},
		{true, map[string]any{"n": 3, "temperature": 0.000001}, badRequest, "n must be 1 when using greedy sampling, got 3."},
		{false, map[string]any{"n": 0}, badRequest, "n must be at least 1, got 0."},
		{true, map[string]any{"n": -1, "temperature": 0}, badRequest, "n must be at least 1, got -1."},
		{false, map[string]any{"temperature": -1}, badRequest, "temperature must be non-negative, got -1.0."},
		{false, map[string]any{"stream": false, "stream_options": map[string]any{"include_usage": true}}, validation, "Stream options can only be defined when `stream=True`."},
	}
	for _, c := range cases {
		path, body := "/v1/completions", completionBody("Hi", 4, true)
		if c.chat {
			path, body = "/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}}, "max_tokens": 4, "stream": true}
		}
		for k, v := range c.extra {
			body[k] = v
		}
		r := post(context.Background(), base+path, body, nil)
		require.Equal(t, 400, r.status, "%v", c.extra)
		require.Equal(t, "application/json", r.header.Get("Content-Type"), "errors are not streamed")
		var e errorResponse
		require.NoError(t, json.Unmarshal(r.body, &e))
		require.Equal(t, errorInfo{Message: c.msg, Type: c.typ, Code: 400}, e.Error, "%v", c.extra)
	}
	for _, ok := range []map[string]any{{"logprobs": 20}, {"logprobs": 0}, {"logprobs": true}, {"n": 2}, {"n": 2, "temperature": 0.5}, {"temperature": 0}} {
		body := completionBody("Hi", 3, false)
		for k, v := range ok {
			body[k] = v
		}
		r := post(context.Background(), base+"/v1/completions", body, nil)
		require.Equal(t, 200, r.status, "%v: %s", ok, r.body)
	}
}

func itoa(n int) string { return string(marshal(n)) }

// TestClientParsesLogprobsAndN: servegate's own client reads streams with
// logprobs and with several choices, and counts the server's output tokens
// (all choices') from the usage chunk.
func TestClientParsesLogprobsAndN(t *testing.T) {
	s, base := start(t, Config{Params: ptrParams(testParams())})
	for i, c := range []struct {
		backend string
		extra   map[string]any
		n       int
	}{
		{client.BackendOpenAI, map[string]any{"logprobs": 3, "temperature": 1}, 1},
		{client.BackendOpenAIChat, map[string]any{"logprobs": true, "top_logprobs": 5}, 1},
		{client.BackendOpenAI, map[string]any{"n": 3, "temperature": 1}, 3},
		{client.BackendOpenAIChat, map[string]any{"n": 2, "temperature": 1, "logprobs": true, "top_logprobs": 2}, 2},
	} {
		path := "/v1/completions"
		if c.backend == client.BackendOpenAIChat {
			path = "/v1/chat/completions"
		}
		cl := newClient(t, c.backend, base+path)
		cl.ExtraBody = c.extra
		id := "client-lp-n-" + itoa(i)
		rec := cl.Do(context.Background(), client.Request{Prompt: "Tell me a story.", OutputLen: 7, RequestID: id})
		require.True(t, rec.Success, "%v: %s", c.extra, rec.Error)
		require.Equal(t, 7*c.n, rec.OutputTokens, "%v", c.extra)
		tr, ok := s.Truth(id)
		require.True(t, ok)
		require.Equal(t, 7*c.n, tr.OutputTokens)
		require.Len(t, rec.ITL, len(tr.ChunkMS)-1, "%v: every chunk of every choice counts", c.extra)
	}
}

// TestLogprobsNonASCII: text_offset counts characters (Python's len), not
// bytes, and chat's bytes are the token's UTF-8, for tokens beyond ASCII
// (the shipped output vocabulary is ASCII words, a custom one need not be).
func TestLogprobsNonASCII(t *testing.T) {
	v := &vocab{ids: []int{1, 2, 3, 4}, texts: map[int]string{1: " café", 2: " naïve", 3: " 日本", 4: " x"}}
	ids := []int{1, 2, 3, 4}
	lp, end := v.completionLogprobsOf(newLogprobSampler(v, 1, false), ids, 2, 7)
	require.Equal(t, []int{7, 12, 18, 21}, lp.TextOffset)
	require.Equal(t, 23, end)
	require.Equal(t, []string{" café", " naïve", " 日本", " x"}, lp.Tokens)
	checkCompletionLogprobs(t, marshal(lp), v.text(ids), 2, 7, false)

	chat := v.chatLogprobsOf(newLogprobSampler(v, 1, false), ids, 3)
	require.Equal(t, byteList(" 日本"), chat.Content[2].Bytes)
	require.Contains(t, string(marshal(chat)), `"token":" 日本","logprob":`+string(chat.Content[2].Logprob.append(nil))+`,"bytes":[32,230,151,165,230,156,172]`)
	for _, c := range chat.Content {
		require.Len(t, c.TopLogprobs, 3, "the vocabulary has enough other words")
	}
	// With fewer words than asked for, the lists stop short rather than repeat.
	small := &vocab{ids: []int{1, 2}, texts: v.texts}
	require.Len(t, small.chatLogprobsOf(newLogprobSampler(small, 1, false), []int{1}, 5).Content[0].TopLogprobs, 2)
}
