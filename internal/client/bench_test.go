package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"

	"github.com/servegate/servegate/internal/cputime"
	"github.com/servegate/servegate/internal/metrics"
)

// renderStream pre-renders a vLLM v0.13 completions stream of n token
// chunks plus the usage chunk and [DONE].
func renderStream(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `data: {"id":"cmpl-5d3c1f0e9b7a4c2e8f6a1b3c5d7e9f01","object":"text_completion","created":1764412800,"model":"meta-llama/Llama-3.2-1B-Instruct","choices":[{"index":0,"text":" tok%d","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}],"usage":null}`+"\n\n", i%1000)
	}
	fmt.Fprintf(&b, `data: {"id":"cmpl-5d3c1f0e9b7a4c2e8f6a1b3c5d7e9f01","object":"text_completion","created":1764412800,"model":"meta-llama/Llama-3.2-1B-Instruct","choices":[],"usage":{"prompt_tokens":12,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", 12+n, n)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// renderChatStream pre-renders a vLLM v0.13 chat stream of n token chunks
// (after the role chunk) plus the usage chunk and [DONE]; with reasoning,
// the first half are reasoning_content deltas.
func renderChatStream(n int, reasoning bool) []byte {
	var b bytes.Buffer
	const head = `data: {"id":"chatcmpl-5d3c1f0e9b7a4c2e8f6a1b3c5d7e9f01","object":"chat.completion.chunk","created":1764412800,"model":"meta-llama/Llama-3.2-1B-Instruct","choices":[{"index":0,"delta":`
	fmt.Fprintf(&b, "%s{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", head)
	for i := range n {
		field := "content"
		if reasoning && i < n/2 {
			field = "reasoning_content"
		}
		fmt.Fprintf(&b, "%s{\"%s\":\" tok%d\"},\"logprobs\":null,\"finish_reason\":null,\"token_ids\":null}]}\n\n", head, field, i%1000)
	}
	fmt.Fprintf(&b, `data: {"id":"chatcmpl-5d3c1f0e9b7a4c2e8f6a1b3c5d7e9f01","object":"chat.completion.chunk","created":1764412800,"model":"meta-llama/Llama-3.2-1B-Instruct","choices":[],"usage":{"prompt_tokens":12,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", 12+n, n)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// chunkedReader returns at most step bytes a read, like a network.
type chunkedReader struct {
	b    []byte
	step int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b[:min(len(r.b), r.step, len(p))])
	r.b = r.b[n:]
	return n, nil
}

// BenchmarkIngest measures the client's own cost per streamed chunk (SSE
// framing, JSON scan, timing, text accumulation) on a 256-chunk stream
// delivered in network-sized reads, with no HTTP in the way: a completions
// stream (read=N), and a chat stream, plain (chat/read=N) or half
// reasoning (chat-reasoning/read=N). ns/chunk, B/chunk and allocs/chunk are
// the figures; the targets are ≤ 2 µs and ≤ 1 allocation a chunk.
func BenchmarkIngest(b *testing.B) {
	const chunks = 256
	for _, kind := range []string{"", "chat/", "chat-reasoning/"} {
		for _, step := range []int{1448, 16384} {
			benchIngest(b, kind, step, chunks)
		}
	}
}

// benchIngest is one case of BenchmarkIngest.
func benchIngest(b *testing.B, kind string, step, chunks int) {
	body, backend, url := renderStream(chunks), BackendOpenAI, "http://unused/v1/completions"
	if kind != "" {
		body, backend, url = renderChatStream(chunks, kind == "chat-reasoning/"), BackendOpenAIChat, "http://unused/v1/chat/completions"
	}
	{
		b.Run(fmt.Sprintf("%sread=%d", kind, step), func(b *testing.B) {
			c := &Client{Backend: backend, URL: url, Model: "m"}
			c.init()
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			ctx := context.Background()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu0 := cputime.Process()
			n := 0
			var bufs streamBufs
			for b.Loop() {
				a := answer{status: http.StatusOK, contentType: "text/event-stream", body: &chunkedReader{b: body, step: step}}
				var rec metrics.Record
				c.readStream(ctx, ctx, &a, &bufs, &rec, c.outputCap(Request{OutputLen: chunks}), c.now)
				if !rec.Success || rec.OutputTokens != chunks {
					b.Fatalf("bad record: %+v", rec.Error)
				}
				n++
			}
			cpu := cputime.Process() - cpu0
			runtime.ReadMemStats(&after)
			per := float64(n * chunks)
			b.ReportMetric(float64(cpu.Nanoseconds())/per, "cpu-ns/chunk")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/chunk")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/per, "allocs/chunk")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/per, "B/chunk")
		})
	}
}
