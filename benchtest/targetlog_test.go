package benchtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
)

// The target's log is read when a test fails (not when the target
// started), holds its last 200 lines, and is shown once per target: the
// other failed tests on the same target point to it.
func TestLogTargetOncePerTarget(t *testing.T) {
	reads := 0
	tgt := pipeline.WithLogs(pipeline.Target{Kind: "vllm", BaseURL: "http://127.0.0.1:1"}, func(context.Context) (string, error) {
		reads++
		var b strings.Builder
		for i := range 250 {
			fmt.Fprintf(&b, "line %d read %d\n", i, reads)
		}
		return b.String(), nil
	}, nil)
	first, second := &recordTB{TB: t}, &recordTB{TB: t}
	logTarget(first, tgt)
	logTarget(second, tgt)
	assert.Equal(t, 1, reads, "the log is read once")
	require.Len(t, first.logs, 1)
	assert.Contains(t, first.logs[0], "[50 earlier lines]\nline 50 read 1\n")
	assert.True(t, strings.HasSuffix(first.logs[0], "line 249 read 1"))
	require.Len(t, second.logs, 1)
	assert.Contains(t, second.logs[0], "shown above")
}

// A scenario that cannot run on the target the environment selects is
// skipped with the reason, before any target starts.
func TestRunSkipsUnsupportedScenario(t *testing.T) {
	t.Setenv(scenario.EnvTarget, scenario.TargetVLLM)
	sc := parse(t, tiny) // profile instant: the simulator's latency model
	var inner *testing.T
	reached := false
	ok := t.Run("child", func(t *testing.T) {
		inner = t
		start(t, t, sc)
		reached = true
	})
	assert.True(t, ok)
	assert.True(t, inner.Skipped(), "the scenario is skipped")
	assert.False(t, reached, "no target was started")
}
