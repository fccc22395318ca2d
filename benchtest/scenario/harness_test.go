package scenario

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHarnessDefaultsAndOverrides(t *testing.T) {
	scs, err := Parse("h.yaml", []byte("- name: a\n- name: b\n  harness: {max_lateness_p99: 20ms, max_cpu: 0}\n"))
	require.NoError(t, err)
	assert.Equal(t, DefaultHarness, scs[0].Harness)
	assert.Equal(t, []Bound{
		{Metric: "p99_lateness_ms", Op: "<=", Value: 50},
		{Metric: "client_cpu_ratio", Op: "<=", Value: 0.9},
		{Metric: "sched_latency_p99_ms", Op: "<=", Value: 50},
	}, scs[0].Harness.Bounds())
	h := scs[1].Harness
	assert.Equal(t, Duration(20*time.Millisecond), h.MaxLatenessP99)
	assert.Zero(t, h.MaxCPU, "a written 0 turns the check off")
	assert.Len(t, h.Bounds(), 2)
	assert.Equal(t, DefaultReruns, h.Reruns)
}

// TestHarnessCheckFailsClosed: a health figure that was not measured
// fails its limit, and every verdict is marked as the harness's.
func TestHarnessCheckFailsClosed(t *testing.T) {
	vs := DefaultHarness.Check(func(name string) (float64, bool) {
		if name == "p99_lateness_ms" {
			return 3, true
		}
		return 0, false
	})
	require.Len(t, vs, 3)
	assert.True(t, vs[0].Pass && vs[0].Harness)
	assert.False(t, vs[1].Pass || vs[1].Found)
	assert.True(t, vs[2].Harness)
}
