package pipeline

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
)

func parse(t *testing.T, src string) *scenario.Scenario {
	t.Helper()
	scs, err := scenario.Parse("inline.yaml", []byte(src))
	require.NoError(t, err)
	return scs[0]
}

const tiny = `
name: tiny
target: {kind: inproc, profile: instant}
backend: openai-chat
dataset: {name: random, num_prompts: 12, input_len: 32, output_len: 8, seed: 3}
load: {request_rate: 200, max_duration: 1m}
# The harness checks are off: these tests check the outputs, which a
# loaded machine must not turn into an invalid run (health_test.go
# checks the harness).
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
slo:
  goodput: {ttft: 10000}
  bounds:
    - failed == 0
    - completed == 12
    - p99_ttft_ms <= 10000
    - goodput_ratio >= 1
`

// execute runs a scenario once against its target, outside any test
// assertion, and returns the outcome.
func execute(t *testing.T, sc *scenario.Scenario, hooks Hooks) *Outcome {
	t.Helper()
	plan := NewPlan(sc)
	tgt, err := StartTarget(t.Context(), plan.Target, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tgt.Close(context.Background()) })
	o, err := Execute(t.Context(), plan, tgt, hooks)
	require.NoError(t, err)
	return o
}
