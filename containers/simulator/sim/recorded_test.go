package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// recordedDir holds requests and answers recorded from a real vLLM 0.13.0
// server (see its README.md).
var recordedDir = filepath.Join(fixtures.Dir(), "fixtures", "vllm-recorded")

// masks replace what legitimately differs between two servers: generated
// ids, creation times, the generated text (vLLM served random weights), the
// model's path, and the logprobs' values, token strings, their bytes and
// text offsets (the simulator makes its own up). Each masked value keeps
// its place, so the logprobs' structure, keys, order, nulls and the number
// of tokens and of alternatives are still compared.
var masks = []struct {
	re   *regexp.Regexp
	with string
	fn   func(string) string // instead of with
}{
	{re: regexp.MustCompile(`"id":"(cmpl|chatcmpl)-[0-9a-f]{16}"`), with: `"id":"$1-ID"`},
	{re: regexp.MustCompile(`"created":\d+`), with: `"created":0`},
	{re: regexp.MustCompile(`"text":"(?:[^"\\]|\\.)*"`), with: `"text":"T"`},
	{re: regexp.MustCompile(`"content":"(?:[^"\\]|\\.)+"`), with: `"content":"T"`},
	{re: regexp.MustCompile(`"root":"[^"]*"`), with: `"root":"R"`},
	{re: regexp.MustCompile(`"modelperm-[0-9a-f]+"`), with: `"modelperm-X"`},
	// chat logprobs
	{re: regexp.MustCompile(`"logprob":` + floatRe), with: `"logprob":L`},
	{re: regexp.MustCompile(`"token":` + stringRe), with: `"token":"T"`},
	{re: regexp.MustCompile(`"bytes":\[[0-9,]*\]`), with: `"bytes":[B]`},
	// completions logprobs
	{re: regexp.MustCompile(`"text_offset":\[[0-9,]*\]`), fn: func(s string) string {
		return regexp.MustCompile(`\d+`).ReplaceAllString(s, "O")
	}},
	{re: regexp.MustCompile(`"token_logprobs":\[[^\]]*\]`), fn: func(s string) string {
		return regexp.MustCompile(floatRe).ReplaceAllString(s, "L")
	}},
	{re: regexp.MustCompile(`"tokens":\[(?:` + stringRe + `,?)*\]`), fn: func(s string) string {
		return `"tokens":` + regexp.MustCompile(stringRe).ReplaceAllString(strings.TrimPrefix(s, `"tokens":`), `"T"`)
	}},
	{re: regexp.MustCompile(`"top_logprobs":\[(?:\{(?:` + stringRe + `:` + floatRe + `,?)*\},?)*\]`), fn: func(s string) string {
		return `"top_logprobs":` + regexp.MustCompile(stringRe+`:`+floatRe).ReplaceAllString(strings.TrimPrefix(s, `"top_logprobs":`), `"T":L`)
	}},
}

// stringRe matches a JSON string, floatRe a JSON number with a fraction or
// an exponent (Python writes every float so).
const (
	stringRe = `"(?:[^"\\]|\\.)*"`
	floatRe  = `-?\d+(?:\.\d+(?:[eE][-+]?\d+)?|[eE][-+]?\d+)`
)

func mask(s string) string {
	for _, m := range masks {
		if m.fn != nil {
			s = m.re.ReplaceAllStringFunc(s, m.fn)
			continue
		}
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// topDictRe is a masked completions top_logprobs entry.
var topDictRe = regexp.MustCompile(`\{"T":L(?:,"T":L)*\}`)

// alternatives makes a completions request's top_logprobs entries with k
// and k+1 tokens alike: the sampled token comes first, then the top k
// without it, so there are k+1 when it is not among them and k when it is.
// Which it is depends on the values (with random weights vLLM's were all
// tied, and greedy sampling and top-k broke the ties differently).
func alternatives(s string, k int) string {
	return topDictRe.ReplaceAllStringFunc(s, func(d string) string {
		if n := strings.Count(d, `"T":L`); n == k || n == k+1 {
			return fmt.Sprintf(`{"T":L,"(%d or %d entries)"}`, k, k+1)
		}
		return d
	})
}

// choiceEventRe finds the choice index of a content chunk.
var choiceEventRe = regexp.MustCompile(`^data: \{.*?"choices":\[\{"index":(\d+),`)

// byChoice orders a stream's content chunks by choice, stably, leaving the
// role chunks and the rest in place. How vLLM interleaves the chunks of an
// n > 1 request depends on when its engine core took up each child
// request: in the recordings the second child came one step late, so
// choice 0's chunks all came first; the simulator admits the choices
// together and alternates them step by step.
func byChoice(body string) string {
	events := strings.SplitAfter(body, "\n\n")
	var at []int
	for i, e := range events {
		if choiceEventRe.MatchString(e) && !strings.Contains(e, `"delta":{"role":`) {
			at = append(at, i)
		}
	}
	content := make([]string, len(at))
	for i, k := range at {
		content[i] = events[k]
	}
	index := func(e string) int {
		n, _ := strconv.Atoi(choiceEventRe.FindStringSubmatch(e)[1])
		return n
	}
	slices.SortStableFunc(content, func(a, b string) int { return index(a) - index(b) })
	for i, k := range at {
		events[k] = content[i]
	}
	return strings.Join(events, "")
}

// TestRecordedVLLM replays every request recorded against real vLLM 0.13.0
// that the simulator supports and requires the same status, content type
// and body, byte for byte once masked: every field, its order, null or
// absent, the usage numbers (the simulator tokenizes with the same Llama-3
// tokenizer and chat template), the error messages.
func TestRecordedVLLM(t *testing.T) {
	if _, err := os.Stat(recordedDir); err != nil {
		t.Fatalf("recorded vLLM fixtures missing: %v", err)
	}
	p := testParams()
	p.Model = "tiny-llama"
	p.StepFixedMS = 20 // one token per chunk, as recorded
	srv, base := start(t, Config{Params: &p})
	cases := []struct {
		name, method, path string
		header             map[string]string
	}{
		{name: "completions-stream-usage", path: "/v1/completions"},
		{name: "completions-stream-continuous-usage", path: "/v1/completions"},
		{name: "completions-stream-no-usage", path: "/v1/completions"},
		{name: "completions-stream-request-id", path: "/v1/completions", header: map[string]string{"X-Request-Id": "bench-0123abcd-0"}},
		{name: "completions-nonstream", path: "/v1/completions"},
		{name: "chat-stream-usage", path: "/v1/chat/completions"},
		{name: "chat-stream-continuous-usage", path: "/v1/chat/completions"},
		{name: "chat-stream-no-usage", path: "/v1/chat/completions"},
		{name: "chat-stream-request-id", path: "/v1/chat/completions", header: map[string]string{"X-Request-Id": "bench-0123abcd-1"}},
		{name: "chat-nonstream", path: "/v1/chat/completions"},
		{name: "completions-stream-logprobs", path: "/v1/completions"},
		{name: "completions-stream-logprobs3", path: "/v1/completions"},
		{name: "completions-nonstream-logprobs", path: "/v1/completions"},
		{name: "chat-stream-logprobs", path: "/v1/chat/completions"},
		{name: "chat-nonstream-logprobs", path: "/v1/chat/completions"},
		{name: "completions-stream-n2", path: "/v1/completions"},
		{name: "chat-stream-n2", path: "/v1/chat/completions"},
		{name: "completions-nonstream-n2", path: "/v1/completions"},
		{name: "error-unknown-model", path: "/v1/completions"},
		{name: "error-unknown-model-stream", path: "/v1/completions"},
		{name: "error-max-tokens-stream", path: "/v1/completions"},
		{name: "error-max-tokens-nonstream", path: "/v1/completions"},
		{name: "error-chat-max-tokens-stream", path: "/v1/chat/completions"},
		{name: "error-prompt-too-long-stream", path: "/v1/completions"},
		{name: "models", method: http.MethodGet, path: "/v1/models"},
		{name: "version", method: http.MethodGet, path: "/version"},
		{name: "health", method: http.MethodGet, path: "/health"},
		{name: "ping", method: http.MethodGet, path: "/ping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, ctype := recordedHead(t, c.name)
			want, err := os.ReadFile(filepath.Join(recordedDir, c.name+".body.txt"))
			require.NoError(t, err)
			var body []byte
			if c.method == "" {
				c.method = http.MethodPost
				body, err = os.ReadFile(filepath.Join(recordedDir, c.name+".request.json"))
				require.NoError(t, err)
			}
			var resp *http.Response
			var got []byte
			unmerged(t, srv, func() string {
				req, err := http.NewRequestWithContext(context.Background(), c.method, base+c.path, bytes.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				for k, v := range c.header {
					req.Header.Set(k, v)
				}
				resp, err = http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				got, err = io.ReadAll(resp.Body)
				require.NoError(t, err)
				return string(got)
			})
			require.Equal(t, status, resp.StatusCode)
			require.Equal(t, ctype, resp.Header.Get("Content-Type"))
			norm := func(s string) string {
				s = byChoice(mask(s))
				var rq struct {
					Logprobs *int `json:"logprobs"`
				}
				if c.path == "/v1/completions" && json.Unmarshal(body, &rq) == nil && rq.Logprobs != nil {
					s = alternatives(s, *rq.Logprobs)
				}
				return s
			}
			require.Equal(t, norm(string(want)), norm(string(got)))
		})
	}
}

// recordedHead reads the status and content type of a recorded answer.
func recordedHead(tb testing.TB, name string) (int, string) {
	tb.Helper()
	f, err := os.Open(filepath.Join(recordedDir, name+".headers.txt"))
	require.NoError(tb, err)
	defer f.Close()
	resp, err := http.ReadResponse(bufio.NewReader(f), nil)
	require.NoError(tb, err)
	return resp.StatusCode, resp.Header.Get("Content-Type")
}

// TestRecordedMetricsNames: every metric family the simulator exports is
// one real vLLM exports, with the same type and help text.
func TestRecordedMetricsNames(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(recordedDir, "metrics.body.txt"))
	require.NoError(t, err)
	real := map[string]bool{}
	for _, line := range strings.Split(string(want), "\n") {
		if strings.HasPrefix(line, "# ") {
			real[line] = true
		}
	}
	s, err := New(Config{Params: ptrParams(testParams())})
	require.NoError(t, err)
	defer s.Close()
	n := 0
	for _, line := range strings.Split(scrape(t, s), "\n") {
		if strings.HasPrefix(line, "# ") {
			require.True(t, real[line], "vLLM 0.13.0 has no %q", line)
			n++
		}
	}
	require.Greater(t, n, 40)
}
