package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/gate/accuracy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerMoves: a TTFT regression comes with the server metrics that
// moved (preemptions from 0 to 37); the unmoved ones are not listed.
func TestServerMoves(t *testing.T) {
	dir := t.TempDir()
	var base, head []map[string]float64
	for i := range 6 {
		d := float64(i) * 0.001
		base = append(base, map[string]float64{"fail-ratio": 0, "ttft-p99-sec": 0.100 + d, "server-preemptions": 0, "server-kv-peak-ratio": 0.40 + d})
		head = append(head, map[string]float64{"fail-ratio": 0, "ttft-p99-sec": 0.150 + d, "server-preemptions": 37, "server-kv-peak-ratio": 0.40 + d})
	}
	rep, err := Run(context.Background(), Config{
		Base: []string{accuracy.WriteRuns(t, dir, "base", base, false)},
		Head: []string{accuracy.WriteRuns(t, dir, "head", head, false)},
	})
	require.NoError(t, err)
	require.Equal(t, Fail, rep.Verdict)
	moves := rep.ServerMoves()
	require.Len(t, moves, 1)
	assert.Equal(t, "server-preemptions 0 → 37", moves[0].String())
	var b strings.Builder
	require.NoError(t, rep.WriteServerMoves(&b))
	assert.Equal(t, "Scenarios/scenario=accuracy: server metrics moved: server-preemptions 0 → 37\n", b.String())

	rep, err = Run(context.Background(), Config{
		Base: []string{accuracy.WriteRuns(t, dir, "base", base, false)},
		Head: []string{accuracy.WriteRuns(t, dir, "base2", base, false)},
	})
	require.NoError(t, err)
	assert.Empty(t, rep.ServerMoves(), "no regression, nothing to explain")
}
