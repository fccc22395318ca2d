package sim

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// recordedDir holds requests and answers recorded from a real vLLM 0.13.0
// server (see its README.md).
var recordedDir = filepath.Join(fixtures.Dir(), "fixtures", "vllm-recorded")

// masks replace what legitimately differs between two servers: generated
// ids, creation times, the generated text (vLLM served random weights) and
// the model's path.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"id":"(cmpl|chatcmpl)-[0-9a-f]{16}"`), `"id":"$1-ID"`},
	{regexp.MustCompile(`"created":\d+`), `"created":0`},
	{regexp.MustCompile(`"text":"(?:[^"\\]|\\.)*"`), `"text":"T"`},
	{regexp.MustCompile(`"content":"(?:[^"\\]|\\.)+"`), `"content":"T"`},
	{regexp.MustCompile(`"root":"[^"]*"`), `"root":"R"`},
	{regexp.MustCompile(`"modelperm-[0-9a-f]+"`), `"modelperm-X"`},
}

func mask(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
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
			require.Equal(t, mask(string(want)), mask(string(got)))
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
