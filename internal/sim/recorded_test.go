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
	// FastAPI quotes where vLLM is installed.
	{re: regexp.MustCompile(`File \\"[^"\\]*\\"`), with: `File \"F\"`},
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
		{name: "error-bad-json", path: "/v1/completions"},
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
				// record.sh adds a newline to the file, not to what it sent.
				body = bytes.TrimSuffix(body, []byte("\n"))
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
			requireFraming(t, c.name, resp)
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
	resp := recordedResponse(tb, name)
	return resp.StatusCode, resp.Header.Get("Content-Type")
}

// recordedResponse reads the status line and headers of a recorded answer.
func recordedResponse(tb testing.TB, name string) *http.Response {
	tb.Helper()
	f, err := os.Open(filepath.Join(recordedDir, name+".headers.txt"))
	require.NoError(tb, err)
	defer f.Close()
	resp, err := http.ReadResponse(bufio.NewReader(f), nil)
	require.NoError(tb, err)
	return resp
}

// requireFraming requires got to be framed as the recorded answer was
// (a Content-Length, or chunked) and to carry an X-Request-Id header only
// if the recorded one did.
func requireFraming(tb testing.TB, name string, got *http.Response) {
	tb.Helper()
	want := recordedResponse(tb, name)
	require.Equal(tb, want.ContentLength >= 0, got.ContentLength >= 0,
		"Content-Length: recorded %d, simulator %d (-1 is chunked)", want.ContentLength, got.ContentLength)
	require.Equal(tb, want.Header.Get("X-Request-Id"), got.Header.Get("X-Request-Id"), "X-Request-Id header")
}

// TestRecordedMetricsNames: every metric family the simulator exports is
// one real vLLM exports, with the same type and help text, but for its one
// own: servegate:sim_info, which says the server is the simulator (so that
// servegate sim calibrate refuses to fit a twin to a twin).
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
	ours := map[string]bool{}
	body := scrape(t, s)
	require.Contains(t, body, "\nservegate:sim_info{")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "# HELP servegate:sim_info ") || strings.HasPrefix(line, "# TYPE servegate:sim_info ") {
			continue
		}
		if strings.HasPrefix(line, "# ") {
			require.True(t, real[line], "vLLM 0.13.0 has no %q", line)
			ours[line] = true
			n++
		}
	}
	require.Greater(t, n, 40)
	// And every family vLLM exports, but for its Python runtime's.
	for line := range real {
		if strings.Contains(line, " python_") {
			continue
		}
		require.True(t, ours[line], "the simulator lacks %q", line)
	}
}

// TestMetricsRequestFamilies checks the per-request, per-step and HTTP
// families against what was sent: three completions of 5 tokens, a chat
// request of 3, and a request to a path that is no route.
func TestMetricsRequestFamilies(t *testing.T) {
	p := testParams()
	_, base := start(t, Config{Params: &p})
	for i := range 3 {
		r := post(context.Background(), base+"/v1/completions", completionBody(words(20, i), 5, true), nil)
		require.Equal(t, http.StatusOK, r.status)
	}
	r := post(context.Background(), base+"/v1/chat/completions", map[string]any{
		"messages": []map[string]string{{"role": "user", "content": "hi"}}, "max_completion_tokens": 3, "ignore_eos": true}, nil)
	require.Equal(t, http.StatusOK, r.status)
	fetchRaw(t, "GET", base+"/no/such/path", nil, nil)
	fetchRaw(t, "GET", base+"/health", nil, nil)
	text := fetchRaw(t, "GET", base+"/metrics", nil, nil)
	value := func(series string) float64 {
		t.Helper()
		for _, line := range strings.Split(text, "\n") {
			if v, ok := strings.CutPrefix(line, series+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err)
				return f
			}
		}
		t.Fatalf("/metrics has no series %s", series)
		return 0
	}
	lbl := `{engine="0",model_name="sim-test"}`
	require.Equal(t, 4.0, value("vllm:request_params_max_tokens_count"+lbl))
	require.Equal(t, 18.0, value("vllm:request_params_max_tokens_sum"+lbl))
	require.Equal(t, 4.0, value("vllm:request_params_n_sum"+lbl))
	require.Equal(t, 18.0, value("vllm:request_max_num_generation_tokens_sum"+lbl))
	require.Equal(t, 4.0, value("vllm:request_time_per_output_token_seconds_count"+lbl))
	require.Greater(t, value("vllm:request_time_per_output_token_seconds_sum"+lbl), 0.0)
	// Every prompt and generated token lands in exactly one step.
	require.Equal(t, value("vllm:prompt_tokens_total"+lbl)+value("vllm:generation_tokens_total"+lbl),
		value("vllm:iteration_tokens_total_sum"+lbl))
	require.Equal(t, value("vllm:prompt_tokens_total"+lbl)-value("vllm:prefix_cache_hits_total"+lbl),
		value("vllm:request_prefill_kv_computed_tokens_sum"+lbl))
	require.Equal(t, 1.0, value(`vllm:engine_sleep_state{engine="0",model_name="sim-test",sleep_state="awake"}`))
	require.Equal(t, 3.0, value(`http_requests_total{handler="/v1/completions",method="POST",status="2xx"}`))
	require.Equal(t, 1.0, value(`http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"}`))
	require.Equal(t, 1.0, value(`http_requests_total{handler="none",method="GET",status="4xx"}`))
	require.NotContains(t, text, `handler="/health"`, "vLLM leaves /health out")
	require.Equal(t, 0.0, value(`http_response_size_bytes_sum{handler="/v1/completions"}`), "streams have no Content-Length")
	require.Greater(t, value(`http_response_size_bytes_sum{handler="/v1/chat/completions"}`), 100.0)
	require.Greater(t, value(`http_request_size_bytes_sum{handler="/v1/completions"}`), 100.0)
	require.Equal(t, 5.0, value("http_request_duration_highr_seconds_count"))
	require.Equal(t, 3.0, value(`http_request_duration_seconds_count{handler="/v1/completions",method="POST"}`))
}

// TestRecordedMetricsFraming: /metrics is one response with a
// Content-Length and vLLM's content type, as prometheus_client sends it.
func TestRecordedMetricsFraming(t *testing.T) {
	_, base := start(t, Config{Params: ptrParams(testParams())})
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_, ctype := recordedHead(t, "metrics")
	require.Equal(t, ctype, resp.Header.Get("Content-Type"))
	requireFraming(t, "metrics", resp)
	require.EqualValues(t, len(body), resp.ContentLength)
}

// TestRequestIDHeaders: X-Request-Id is echoed on every response only with
// enable_request_id_headers, as with vLLM's --enable-request-id-headers:
// the request's own id, or 32 new hex digits (uuid4().hex) when it sent
// none; errors and health checks included.
func TestRequestIDHeaders(t *testing.T) {
	for _, on := range []bool{false, true} {
		p := testParams()
		p.EnableRequestIDHeaders = on
		_, base := start(t, Config{Params: &p})
		for _, c := range []struct {
			method, path, body, id string
		}{
			{http.MethodPost, "/v1/completions", `{"prompt":"Hi","max_tokens":2,"stream":true}`, "req-7"},
			{http.MethodPost, "/v1/completions", `{"prompt":"Hi","max_tokens":2}`, ""},
			{http.MethodPost, "/v1/completions", `{"model":`, "bad-json"},
			{http.MethodGet, "/health", "", ""},
			{http.MethodGet, "/metrics", "", "scrape"},
		} {
			req, err := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			if c.id != "" {
				req.Header.Set("X-Request-Id", c.id)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got := resp.Header.Get("X-Request-Id")
			switch {
			case !on:
				require.Empty(t, got, "%s %s", c.method, c.path)
			case c.id != "":
				require.Equal(t, c.id, got, "%s %s", c.method, c.path)
			default:
				require.Regexp(t, `^[0-9a-f]{32}$`, got, "%s %s", c.method, c.path)
			}
		}
	}
}
