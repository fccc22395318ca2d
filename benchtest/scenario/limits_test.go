package scenario

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeyLimits: a numeric key past its documented maximum is an error
// naming file, line, key and maximum (load.warmups 9223372036854775807
// used to panic, dataset.input_len 2000000000 to be OOM-killed).
func TestKeyLimits(t *testing.T) {
	cases := []struct{ src, want string }{
		{"load:\n  warmups: 9223372036854775807\n", "bad.yaml:3: load.warmups: 9223372036854775807 is over the maximum 10000"},
		{"dataset:\n  input_len: 2000000000\n", "bad.yaml:3: dataset.input_len: 2000000000 is over the maximum 1048576"},
		{"dataset:\n  num_prompts: 1000001\n", "bad.yaml:3: dataset.num_prompts: 1000001 is over the maximum 1000000"},
		{"dataset:\n  num_prompts: 1000000\n  input_len: 1024\n", "bad.yaml:3: dataset.num_prompts: 1000000 prompts of up to 1025 tokens are 1025000000 prompt tokens, over the maximum 134217728; lower num_prompts or input_len"},
		{"dataset:\n  name: prefix_repetition\n  num_prefixes: 100001\n", "bad.yaml:4: dataset.num_prefixes: 100001 is over the maximum 100000"},
		{"load:\n  max_concurrency: 100001\n", "bad.yaml:3: load.max_concurrency: 100001 is over the maximum 100000"},
		{"load:\n  request_timeout: 2562047h\n", "bad.yaml:3: load.request_timeout: 2562047h0m0s is over the maximum 168h0m0s"},
		{"target:\n  start_timeout: 169h\n", "bad.yaml:3: target.start_timeout: 169h0m0s is over the maximum 168h0m0s"},
		{"sampling:\n  temperature: 1e300\n", "bad.yaml:3: sampling.temperature: 1e+300 is over the maximum 100"},
		{"sampling:\n  presence_penalty: -3\n", "bad.yaml:3: sampling.presence_penalty: must be in [-2, 2], got -3"},
		{"slo:\n  goodput: {ttft: 1e12}\n", "bad.yaml:3: slo.goodput.ttft: 1e+12 is over the maximum 604800000"},
		{"slo:\n  bounds: [\"failed <= inf\"]\n", "bad.yaml:3: slo.bounds[0]: bound +Inf must be a finite number"},
	}
	for _, c := range cases {
		_, err := Parse("bad.yaml", []byte("name: a\n"+c.src))
		if assert.Error(t, err, c.src) {
			assert.Equal(t, c.want, err.Error())
		}
	}
	_, err := Parse("ok.yaml", []byte("name: a\nload:\n  warmups: 10000\n  max_concurrency: 100000\n  ready_timeout: 168h\ndataset:\n  num_prompts: 100\n  input_len: 1048576\n"))
	assert.NoError(t, err, "values at the limits are accepted")
}

// TestDocsListEveryLimit keeps the limits table of docs/scenarios.md true:
// every limited key appears with its maximum.
func TestDocsListEveryLimit(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	require.NoError(t, err)
	scs, err := Parse("", []byte("name: a\n"))
	require.NoError(t, err)
	for _, c := range scs[0].numLimits() {
		assert.Contains(t, string(doc), "| `"+c.Name+"` | "+c.Max+" |", "docs/scenarios.md does not list the limit of %s", c.Name)
	}
}
