package metrics

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadablePyJSON(t *testing.T) {
	in := `{"label": "Infinity \"NaN\"", "request_rate": Infinity, "burstiness": -Infinity, "x": NaN, "ok": -1.5, "itls": [[0.1]]}` +
		`{"burstiness": NaN}`
	out, words := ReadablePyJSON([]byte(in))
	assert.Equal(t, `{"label": "Infinity \"NaN\"", "request_rate": null, "burstiness": null, "x": null, "ok": -1.5, "itls": [[0.1]]}{"burstiness": null}`, string(out))
	assert.Equal(t, map[string]string{"request_rate": "Infinity", "burstiness": "NaN", "x": "NaN"}, words)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out[:len(out)-len(`{"burstiness": null}`)], &v))

	// Deeper down a non-finite value stays, for the decoder to refuse:
	// a per-request number must never read as 0.
	nested := `{"ttfts": [0.1, NaN], "burstiness": Infinity}`
	out, _ = ReadablePyJSON([]byte(nested))
	assert.Equal(t, `{"ttfts": [0.1, NaN], "burstiness": null}`, string(out))
	_, _, err := RecordsFromResult([]byte(nested))
	assert.Error(t, err)

	var f float64
	require.NoError(t, UnmarshalFloat([]byte("-Infinity"), &f))
	assert.True(t, math.IsInf(f, -1))
	require.NoError(t, UnmarshalFloat([]byte("2.5"), &f))
	assert.Equal(t, 2.5, f)
	assert.Error(t, UnmarshalFloat([]byte(`"x"`), &f))
}
