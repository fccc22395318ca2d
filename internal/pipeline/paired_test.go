package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
)

// TestExecutePair runs one plan against two in-process simulators at
// once, each side started first in turn: both get every request of the
// same schedule, and the benchfmt configuration carries the pair label.
func TestExecutePair(t *testing.T) {
	sc := parse(t, `
name: pair
target: {kind: inproc, profile: instant}
dataset: {num_prompts: 8, input_len: 32, output_len: 4, seed: 7}
load: {request_rate: 200, ready_timeout: 0s}
`)
	plan := NewPlan(sc)
	ctx := context.Background()
	var tgts []*Target
	for range 2 {
		tgt, err := StartTarget(ctx, plan.Target, nil)
		require.NoError(t, err)
		defer tgt.Close(ctx)
		tgts = append(tgts, tgt)
	}
	require.NoError(t, plan.Prepare(ctx))
	for _, baseFirst := range []bool{true, false} {
		ob, oh, err := ExecutePair(ctx, plan, tgts[0], tgts[1], baseFirst, Hooks{})
		require.NoError(t, err)
		assert.Same(t, tgts[0], ob.Target)
		assert.Same(t, tgts[1], oh.Target)
		assert.Equal(t, 8, ob.Summary.Completed)
		assert.Equal(t, 8, oh.Summary.Completed)
		// The same arrival schedule: the same offsets at which requests
		// were due.
		assert.Equal(t, scheduled(ob), scheduled(oh))
		ob.Pair = "3"
		assert.True(t, containsConfig(ob.BenchConfig(), "pair", "3"))
		assert.False(t, containsConfig(oh.BenchConfig(), "pair", "3"))
	}
}

// TestBaseScenario finds base's scenario by path and name, and refuses
// what paired mode cannot pair, naming it.
func TestBaseScenario(t *testing.T) {
	head, base := t.TempDir(), t.TempDir()
	write := func(root, text string) string {
		f := filepath.Join(root, "scenarios", "a.yaml")
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, []byte(text), 0o644))
		return f
	}
	headFile := write(head, "name: a\ntarget: {kind: sim, profile: gpu-8b}\n")
	scs, err := scenario.LoadFile(headFile)
	require.NoError(t, err)
	sc := scs[0]
	t.Setenv(EnvPairedBase, base)
	t.Setenv(EnvPairedHead, head)

	_, err = baseScenario(sc)
	require.ErrorContains(t, err, "paired mode: base's scenario a: load scenario")

	write(base, "name: a\ntarget: {kind: sim, profile: cpu-small}\n")
	bsc, err := baseScenario(sc)
	require.NoError(t, err)
	assert.Equal(t, "cpu-small", bsc.Target.Profile, "base's own target spec")

	write(base, "name: b\ntarget: {kind: sim}\n")
	_, err = baseScenario(sc)
	require.ErrorContains(t, err, "has no scenario a")

	write(base, "name: a\ntarget: {kind: inproc}\n")
	_, err = BaseTarget(context.Background(), sc, nil)
	require.ErrorContains(t, err, "a inproc target is not built from each side's sources; paired mode runs sim and container targets")

	t.Setenv(EnvPairedHead, "")
	_, err = baseScenario(sc)
	require.ErrorContains(t, err, "SERVEGATE_PAIRED_HEAD")
}

// scheduled returns the offsets at which a run's requests were due, sorted.
func scheduled(o *Outcome) []time.Duration {
	var out []time.Duration
	for _, r := range o.Result.Records {
		out = append(out, r.Scheduled)
	}
	slices.Sort(out)
	return out
}
