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
	doc, err := os.ReadFile("../README.md")
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
