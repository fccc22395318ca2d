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

// TestExecutePairRerun: an invalid pair runs again as a whole, so both
// outcomes returned come from one attempt and the hook sees both sides
// of the attempt that was run again.
func TestExecutePairRerun(t *testing.T) {
	sc := parse(t, `
name: rerun
target: {kind: inproc, profile: instant}
dataset: {num_prompts: 4, input_len: 32, output_len: 4, seed: 7}
load: {request_rate: 200, ready_timeout: 0s}
harness: {max_cpu: 0.0000001, reruns: 1}
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
	var rerun []*Target
	ob, oh, err := ExecutePair(ctx, plan, tgts[0], tgts[1], true, Hooks{Rerun: func(o *Outcome) { rerun = append(rerun, o.Target) }})
	require.NoError(t, err)
	assert.ElementsMatch(t, tgts, rerun, "both sides of the first attempt")
	assert.NotEmpty(t, ob.Invalid())
	assert.NotEmpty(t, oh.Invalid())
}

// TestBaseScenario finds base's scenario by path and name, tells a
// scenario new in head apart, and refuses what paired mode cannot pair,
// naming it.
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

	_, err = BaseScenario(sc)
	require.ErrorIs(t, err, ErrNewInHead, "base has no such file")

	write(base, "name: a\ntarget: {kind: sim, profile: cpu-small}\n")
	bsc, err := BaseScenario(sc)
	require.NoError(t, err)
	assert.Equal(t, "cpu-small", bsc.Target.Profile, "base's own target spec")
	require.NoError(t, CheckIdentity(bsc, sc), "the target may differ")
	assert.Equal(t, []string{"target.profile: gpu-8b (base: cpu-small)"}, TargetDiff(bsc.Target, sc.Target, base, head))

	write(base, "name: a\ntarget: {kind: sim}\nload: {request_rate: 3}\n")
	bsc, err = BaseScenario(sc)
	require.NoError(t, err)
	var ie *IdentityError
	require.ErrorAs(t, CheckIdentity(bsc, sc), &ie)
	assert.Equal(t, []string{"load"}, ie.Keys)
	assert.ErrorContains(t, ie, "scenario a: its load differs between base (scenarios/a.yaml:1) and head (scenarios/a.yaml:1)")

	write(base, "name: a\nload: {\n")
	_, err = BaseScenario(sc)
	require.ErrorContains(t, err, "paired mode: base's scenario a: ")
	require.NotErrorIs(t, err, ErrNewInHead)

	write(base, "name: b\ntarget: {kind: sim}\n")
	_, err = BaseScenario(sc)
	require.ErrorIs(t, err, ErrNewInHead)
	require.ErrorContains(t, err, "has no scenario a")

	write(base, "name: a\ntarget: {kind: inproc}\n")
	bsc, err = BaseScenario(sc)
	require.NoError(t, err)
	_, err = BaseTarget(context.Background(), bsc, nil)
	require.ErrorContains(t, err, "a inproc target runs inside the test's process, which base and head would share; paired mode runs sim, container, vllm and url targets")

	t.Setenv(EnvPairedHead, "")
	_, err = BaseScenario(sc)
	require.ErrorContains(t, err, "SERVEGATE_PAIRED_HEAD")
}

// TestTargetDiff lists the keys that differ, with paths taken relative
// to each side's root, and a profile file whose content changed.
func TestTargetDiff(t *testing.T) {
	base, head := t.TempDir(), t.TempDir()
	for root, text := range map[string]string{base: "step_fixed_ms: 10\n", head: "step_fixed_ms: 11\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, "p.yaml"), []byte(text), 0o644))
	}
	b := scenario.Target{Kind: "container", Build: &scenario.Build{Context: filepath.Join(base, "srv")}, Env: map[string]string{"DELAY": "0s"}, Profile: filepath.Join(base, "p.yaml")}
	h := scenario.Target{Kind: "container", Build: &scenario.Build{Context: filepath.Join(head, "srv")}, Env: map[string]string{"DELAY": "5ms", "X": "1"}, Profile: filepath.Join(head, "p.yaml"), Args: []string{"--a", "--b"}}
	assert.Equal(t, []string{
		"target.args: --a (base: none)",
		"target.args: --b (base: none)",
		"target.env.DELAY: 5ms (base: 0s)",
		"target.env.X: 1 (base: none)",
		"target.profile: the file p.yaml differs",
	}, TargetDiff(b, h, base, head))
	assert.Empty(t, TargetDiff(b, b, base, base))

	// A vllm target's serve flags, flag by flag; its image beside them.
	vb := scenario.Target{Kind: "vllm", Image: "vllm/vllm-openai:v0.13.0", Args: []string{"--max-num-seqs", "8", "--enable-prefix-caching", "--dtype=bfloat16"}}
	vh := scenario.Target{Kind: "vllm", Image: "vllm/vllm-openai:v0.14.0", Args: []string{"--max-num-seqs", "4", "--dtype=bfloat16", "--seed", "-1"}}
	changes := TargetChanges(vb, vh, "", "")
	assert.Equal(t, []TargetChange{
		{Key: "target.args", Flag: "--max-num-seqs", Base: "8", Head: "4"},
		{Key: "target.args", Flag: "--seed", Base: FlagAbsent, Head: "-1"},
		{Key: "target.args", Flag: "--enable-prefix-caching", Base: "", Head: FlagAbsent},
		{Key: "target.image", Base: "vllm/vllm-openai:v0.13.0", Head: "vllm/vllm-openai:v0.14.0"},
	}, changes)
	assert.Equal(t, []string{
		"target.args: --max-num-seqs 4 (base: --max-num-seqs 8)",
		"target.args: --seed -1 (base: none)",
		"target.args: none (base: --enable-prefix-caching)",
		"target.image: vllm/vllm-openai:v0.14.0 (base: vllm/vllm-openai:v0.13.0)",
	}, TargetDiff(vb, vh, "", ""))
	// A boolean flag turned off by its --no- spelling is one change.
	on := scenario.Target{Kind: "vllm", Args: []string{"--enable-prefix-caching", "--max-num-seqs", "8"}}
	off := scenario.Target{Kind: "vllm", Args: []string{"--no-enable-prefix-caching", "--max-num-seqs", "4"}}
	assert.Equal(t, []TargetChange{
		{Key: "target.args", Base: "--enable-prefix-caching", Head: "--no-enable-prefix-caching"},
		{Key: "target.args", Flag: "--max-num-seqs", Base: "8", Head: "4"},
	}, TargetChanges(on, off, "", ""))
	assert.Equal(t, []string{
		"target.args: --enable-prefix-caching (base: --no-enable-prefix-caching)",
		"target.args: --max-num-seqs 8 (base: --max-num-seqs 4)",
	}, TargetDiff(off, on, "", ""))
	// A --no- flag with no partner on the other side stays as it is.
	assert.Equal(t, []string{"target.args: --no-enable-prefix-caching (base: none)"},
		TargetDiff(scenario.Target{}, scenario.Target{Args: []string{"--no-enable-prefix-caching"}}, "", ""))
	// Args that do not read as flags differ as one list.
	assert.Equal(t, []string{"target.args: [serve, m2] (base: [serve, m1])"},
		TargetDiff(scenario.Target{Args: []string{"serve", "m1"}}, scenario.Target{Args: []string{"serve", "m2"}}, "", ""))
}

// TestPairLabel reads SERVEGATE_PAIR and SERVEGATE_PAIR_MODE.
func TestPairLabel(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "4": true, "0": false, "x": false} {
		t.Setenv(EnvPair, v)
		_, err := PairLabel()
		assert.Equal(t, ok, err == nil, "SERVEGATE_PAIR=%q", v)
	}
	for v, ok := range map[string]bool{"": true, PairTogether: true, PairAlternate: true, "later": false} {
		t.Setenv(EnvPairMode, v)
		_, err := PairMode()
		assert.Equal(t, ok, err == nil, "SERVEGATE_PAIR_MODE=%q", v)
	}
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
