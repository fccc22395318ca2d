package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// tokensOf counts the tokens of a chunk's choice by its completion
// logprobs (one entry per token).
func tokensOf(tb testing.TB, raw json.RawMessage) int {
	tb.Helper()
	var lp wireCompletionLogprobs
	require.NoError(tb, json.Unmarshal(raw, &lp), string(raw))
	return len(lp.Tokens)
}

// TestNChoicesStream: n=3 streams three independent choices, each with
// max_tokens tokens (ignore_eos) and its own finish reason and continuous
// usage, their first chunks in index order (admitted in the same step);
// the usage chunk sums the choices and counts the prompt once; choice i is
// what a single request with seed+i gives; the later choices hit the
// prompt's blocks in the prefix cache; the ground truth covers all three;
// the same request not streamed lists the same choices in index order.
func TestNChoicesStream(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 10
	s, base := start(t, Config{Params: &p})
	prompt := words(60, 2)
	body := completionBody(prompt, 5, true)
	body["n"], body["temperature"], body["seed"], body["logprobs"] = 3, 0.8, 42, 1
	body["stream_options"] = map[string]any{"include_usage": true, "continuous_usage_stats": true}
	chunks := decodeChunks(t, post(context.Background(), base+"/v1/completions", body, map[string]string{"X-Request-Id": "n3"}))

	texts := make([]string, 3)
	tokens := make([]int, 3)
	finished := make([]bool, 3)
	var order []int
	for _, ch := range chunks[:len(chunks)-1] {
		require.Len(t, ch.Choices, 1)
		c := ch.Choices[0]
		require.Contains(t, []int{0, 1, 2}, c.Index)
		require.False(t, finished[c.Index], "choice %d goes on after its finish", c.Index)
		order = append(order, c.Index)
		texts[c.Index] += *c.Text
		tokens[c.Index] += tokensOf(t, c.Logprobs)
		require.Equal(t, tokens[c.Index], ch.Usage.CompletionTokens, "continuous usage counts the choice's own tokens")
		if c.FinishReason != nil {
			require.Equal(t, "length", *c.FinishReason)
			finished[c.Index] = true
		}
	}
	require.Equal(t, []int{0, 1, 2}, order[:3], "the choices' first tokens come from one step, in index order")
	require.Equal(t, []int{5, 5, 5}, tokens)
	require.Equal(t, []bool{true, true, true}, finished)
	last := chunks[len(chunks)-1]
	require.Empty(t, last.Choices)
	require.Equal(t, 15, last.Usage.CompletionTokens)
	promptLen := last.Usage.PromptTokens
	require.Equal(t, len(realTokenizerFor(t).Encode(prompt, true)), promptLen, "the prompt counts once")

	for i := range 3 {
		single := completionBody(prompt, 5, false)
		single["seed"], single["temperature"] = 42+i, 0.8
		r := post(context.Background(), base+"/v1/completions", single, nil)
		var c wireChunk
		require.NoError(t, json.Unmarshal(r.body, &c), string(r.body))
		require.Equal(t, texts[i], *c.Choices[0].Text, "choice %d is a request with seed 42+%d", i, i)
	}
	require.NotEqual(t, texts[0], texts[1])

	tr, ok := s.Truth("n3")
	require.True(t, ok)
	require.Equal(t, 3, tr.N)
	require.Equal(t, 15, tr.OutputTokens)
	require.Len(t, tr.TokenMS, 15)
	require.Equal(t, 15, sum(tr.ChunkTokens))
	require.Len(t, tr.ChunkMS, len(chunks)-1)
	require.True(t, slices.IsSorted(tr.ChunkMS))
	require.True(t, slices.IsSorted(tr.TokenMS))
	require.Equal(t, "length", tr.FinishReason)
	require.Positive(t, tr.FinishedMS)
	require.Equal(t, promptLen, tr.PromptTokens)
	require.Equal(t, 2*((promptLen-1)/p.BlockSize*p.BlockSize), tr.CachedTokens, "choices 1 and 2 reuse choice 0's full prompt blocks")

	body["stream"] = false
	delete(body, "stream_options")
	r := post(context.Background(), base+"/v1/completions", body, nil)
	require.Equal(t, 200, r.status, string(r.body))
	var whole wireChunk
	require.NoError(t, json.Unmarshal(r.body, &whole))
	require.Len(t, whole.Choices, 3)
	for i, c := range whole.Choices {
		require.Equal(t, i, c.Index)
		require.Equal(t, texts[i], *c.Text)
		require.Equal(t, "length", *c.FinishReason)
		require.Equal(t, 5, tokensOf(t, c.Logprobs))
	}
	require.Equal(t, 15, whole.Usage.CompletionTokens)
	require.Equal(t, promptLen, whole.Usage.PromptTokens)
}

func realTokenizerFor(tb testing.TB) Tokenizer {
	return realTokenizer(tb, fixtures.Llama3)
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestNChatStream: chat with n=2 sends a role chunk per choice first, then
// each choice's content, max_completion_tokens each.
func TestNChatStream(t *testing.T) {
	_, base := start(t, Config{Params: ptrParams(testParams())})
	body := map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}},
		"max_completion_tokens": 4, "ignore_eos": true, "stream": true, "n": 2,
		"logprobs": true, "top_logprobs": 1, "stream_options": map[string]any{"include_usage": true}}
	chunks := decodeChunks(t, post(context.Background(), base+"/v1/chat/completions", body, nil))
	for i := range 2 {
		c := chunks[i].Choices[0]
		require.Equal(t, i, c.Index)
		require.Equal(t, "assistant", c.Delta.Role)
		require.Equal(t, "null", string(c.Logprobs))
	}
	tokens := make([]int, 2)
	for _, ch := range chunks[2 : len(chunks)-1] {
		c := ch.Choices[0]
		require.Empty(t, c.Delta.Role)
		var lp struct {
			Content []wireChatLogprob `json:"content"`
		}
		require.NoError(t, json.Unmarshal(c.Logprobs, &lp))
		tokens[c.Index] += len(lp.Content)
	}
	require.Equal(t, []int{4, 4}, tokens)
	require.Equal(t, 8, chunks[len(chunks)-1].Usage.CompletionTokens)
}

// TestNEarlyStop: without ignore_eos each choice draws its own length and
// finishes with its own reason; usage and the ground truth add them up.
func TestNEarlyStop(t *testing.T) {
	p := testParams()
	p.EOSMinRatio = 0.2
	s, base := start(t, Config{Params: &p})
	body := map[string]any{"prompt": "Hello", "max_tokens": 30, "n": 4, "seed": 3, "stream": true, "logprobs": 0,
		"stream_options": map[string]any{"include_usage": true}}
	chunks := decodeChunks(t, post(context.Background(), base+"/v1/completions", body, map[string]string{"X-Request-Id": "n-eos"}))
	tokens := make([]int, 4)
	reasons := make([]string, 4)
	for _, ch := range chunks[:len(chunks)-1] {
		c := ch.Choices[0]
		tokens[c.Index] += tokensOf(t, c.Logprobs)
		if c.FinishReason != nil {
			reasons[c.Index] = *c.FinishReason
		}
	}
	for i := range 4 {
		want := "stop"
		if tokens[i] == 30 {
			want = "length"
		}
		require.Equal(t, want, reasons[i], "choice %d with %d tokens", i, tokens[i])
	}
	require.Greater(t, len(slices.Compact(slices.Sorted(slices.Values(tokens)))), 1, "lengths %v all alike", tokens)
	require.Equal(t, sum(tokens), chunks[len(chunks)-1].Usage.CompletionTokens)
	tr, _ := s.Truth("n-eos")
	require.Equal(t, sum(tokens), tr.OutputTokens)
}

// TestNMetrics: /metrics counts each choice as a finished request with its
// prompt, as vLLM's engine counts a request's n children, and the request
// once for its n parameter and the most tokens one choice generated.
func TestNMetrics(t *testing.T) {
	s, base := start(t, Config{Params: ptrParams(testParams())})
	body := completionBody(words(40, 7), 6, false)
	body["n"] = 3
	r := post(context.Background(), base+"/v1/completions", body, nil)
	require.Equal(t, 200, r.status, string(r.body))
	var c wireChunk
	require.NoError(t, json.Unmarshal(r.body, &c))
	m := scrape(t, s)
	for _, want := range []string{
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="sim-test"} 3.0`,
		`vllm:generation_tokens_total{engine="0",model_name="sim-test"} 18.0`,
		fmt.Sprintf(`vllm:prompt_tokens_total{engine="0",model_name="sim-test"} %d.0`, 3*c.Usage.PromptTokens),
		`vllm:time_to_first_token_seconds_count{engine="0",model_name="sim-test"} 3.0`,
		`vllm:request_params_max_tokens_count{engine="0",model_name="sim-test"} 3.0`,
		`vllm:request_params_n_count{engine="0",model_name="sim-test"} 1.0`,
		`vllm:request_params_n_sum{engine="0",model_name="sim-test"} 3.0`,
		`vllm:request_max_num_generation_tokens_count{engine="0",model_name="sim-test"} 1.0`,
		`vllm:request_max_num_generation_tokens_sum{engine="0",model_name="sim-test"} 6.0`,
	} {
		require.Contains(t, m, want)
	}
}

// TestNAbort: a client that goes away aborts every choice.
func TestNAbort(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 10
	s, base := start(t, Config{Params: &p})
	ctx, cancel := context.WithCancel(context.Background())
	body := completionBody("Hello", 500, true)
	body["n"] = 3
	go func() {
		time.Sleep(80 * time.Millisecond)
		cancel()
	}()
	r := post(ctx, base+"/v1/completions", body, map[string]string{"X-Request-Id": "n-abort"})
	require.False(t, r.done())
	require.Eventually(t, func() bool {
		tr, _ := s.Truth("n-abort")
		return tr.FinishReason == "abort" && s.eng.snapshot().Running == 0
	}, 5*time.Second, 10*time.Millisecond)
	tr, _ := s.Truth("n-abort")
	require.Less(t, tr.OutputTokens, 1500)
	require.True(t, strings.HasPrefix(r.events[0].data, `{"id":"cmpl-n-abort"`))
}
