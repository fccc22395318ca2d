package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPythonJSONError: where and why Python's json.loads rejects a body,
// as printed by Python 3 for each input (positions in characters).
func TestPythonJSONError(t *testing.T) {
	for _, c := range []struct {
		in  string
		pos int
		why string
	}{
		{"{\"model\":", 9, "Expecting value"},
		{"{\"model\"", 8, "Expecting ':' delimiter"},
		{"{\"mo", 1, "Unterminated string starting at"},
		{"{", 1, "Expecting property name enclosed in double quotes"},
		{"{\"a\":1", 6, "Expecting ',' delimiter"},
		{"{\"a\":1 \"b\":2}", 7, "Expecting ',' delimiter"},
		{"[1,2", 4, "Expecting ',' delimiter"},
		{"{\"a\":1}x", 7, "Extra data"},
		{"{\"a\":\"b\u0001\"}", 7, "Invalid control character at"},
		{"nope", 0, "Expecting value"},
		{"{\"\u00e9\":\"\u00fc\" x}", 9, "Expecting ',' delimiter"},
		{"{\"a\":\"x\\\"", 5, "Unterminated string starting at"},
		{"{,}", 1, "Expecting property name enclosed in double quotes"},
	} {
		pos, why := pythonJSONError([]byte(c.in))
		require.Equal(t, c.pos, pos, "%q", c.in)
		require.Equal(t, c.why, why, "%q", c.in)
	}
}
