package sim

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKnobMaxima: a knob past its maximum is an error naming it and the
// maximum (num_kv_blocks used to overflow into a negative cache size, and
// step_fixed_ms 1e300 into a negative step: instant answers).
func TestKnobMaxima(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--num-kv-blocks", "9223372036854775807"}, "num_kv_blocks: must be <= 1048576, got 9223372036854775807"},
		{[]string{"--step-fixed-ms", "1e300"}, "step_fixed_ms: must be <= 60000, got 1e+300"},
		{[]string{"--max-model-len", "2000000000"}, "max_model_len: must be <= 1048576, got 2000000000"},
		{[]string{"--slowdown", "1e9"}, "slowdown: must be <= 1000, got 1e+09"},
	}
	for _, c := range cases {
		_, _, err := ParseArgs(c.args, nil, &bytes.Buffer{})
		if assert.Error(t, err, c.args) {
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "(-", "a negative size")
		}
	}
	p := DefaultParams()
	for _, key := range Knobs() {
		if m, ok := MaxOf(key); ok {
			require.NoError(t, p.Set(key, m), key)
		}
	}
	require.NoError(t, p.Validate(), "every knob at its maximum")
}

// TestReadmeListsKnobMaxima keeps the knob table of the README true.
func TestReadmeListsKnobMaxima(t *testing.T) {
	doc, err := os.ReadFile("../../containers/simulator/README.md")
	require.NoError(t, err)
	for _, key := range Knobs() {
		row := "| `" + key + "` |"
		if !assert.Contains(t, string(doc), row, "README does not list knob %s", key) {
			continue
		}
		if m, ok := MaxOf(key); ok {
			line := string(doc)[strings.Index(string(doc), row):]
			line = line[:strings.IndexByte(line, '\n')]
			assert.True(t, strings.HasSuffix(line, "| "+m+" |"), "README row of %s does not end with its maximum %s: %s", key, m, line)
		}
	}
}

// TestRequestBounds: a request that asks for too much is a quick 400, as
// vLLM would answer a request past its context (n=1e6 and a 25 MB prompt
// used to tie the simulator up for tens of seconds at up to 1.9 GB).
func TestRequestBounds(t *testing.T) {
	p := testParams()
	_, base := start(t, Config{Params: &p})
	huge := strings.Repeat("lorem ipsum ", 25<<20/12)
	n := completionBody("Hello", 4, false)
	n["n"], n["temperature"] = 1_000_000, 0.8
	cases := []struct {
		name, path string
		body       any
		want       string
	}{
		{"n=1e6", "/v1/completions", n, "n must be at most 1024, got 1000000."},
		{"25 MB prompt", "/v1/completions", completionBody(huge, 4, false), "The request body is over 1310720 bytes"},
		{"25 MB chat message", "/v1/chat/completions", map[string]any{"model": "sim-test", "messages": []any{map[string]any{"role": "user", "content": huge}}}, "The request body is over 1310720 bytes"},
		{"5 MB embedding input", "/v1/embeddings", map[string]any{"model": "sim-test", "input": huge[:5<<20]}, "your request has an input of 5242880 bytes"},
		{"rerank query times documents", "/v1/rerank", map[string]any{"model": "sim-test", "query": huge[:1<<16], "documents": strings.Split(strings.Repeat("d,", 100), ",")}, "your request has an input of"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := post(t.Context(), base+c.path, c.body, nil)
			require.NoError(t, r.err)
			assert.Equal(t, 400, r.status)
			assert.Contains(t, string(r.body), c.want)
		})
	}
}
