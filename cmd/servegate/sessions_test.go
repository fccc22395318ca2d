package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

const sessionScenarioYAML = `name: chat-sessions
target: {kind: inproc, profile: instant}
sessions:
  source:
    kind: synthetic
    num_conversations: 3
    prompt_input:
      num_turns: {distribution: constant, value: 4}
      num_tokens: {distribution: constant, value: 16}
    prompt_output:
      num_tokens: {distribution: constant, value: 4}
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
slo: {bounds: ["sessions == 3"]}
`

// A session scenario runs through `servegate bench --scenario` with its
// Sessions section after vLLM's block; a flag it would not use is refused
// rather than silently ignored.
func TestBenchSessionScenario(t *testing.T) {
	path := writeScenario(t, sessionScenarioYAML)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--scenario", path, "--no-plot"}, &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "Successful requests:                     6")
	assert.Contains(t, stdout.String(), "Sessions:                                3")
	assert.Contains(t, stdout.String(), "P99 TTFT later turns (ms):")

	for _, flag := range [][]string{{"--request-rate", "4"}, {"--num-prompts", "5"}, {"--random-input-len", "9"}, {"--seed", "3"}, {"--max-concurrency", "2"}} {
		stderr.Reset()
		code := run(context.Background(), append([]string{"bench", "--scenario", path}, flag...), &bytes.Buffer{}, &stderr)
		assert.Equal(t, 1, code, flag)
		assert.Contains(t, stderr.String(), "is a session scenario: "+flag[0]+" does not apply", flag)
	}
}
