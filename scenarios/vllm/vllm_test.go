// Package vllm holds the scenarios for a real vLLM on CPU: the tiny model
// (two layers, random weights, the Llama-3 tokenizer; no download) in the
// image `make vllm-image` builds for this CPU, with SLOs calibrated on a
// 2-core x86 machine (README.md beside this file).
//
// They run only with SERVEGATE_TARGET=vllm: starting vLLM takes a minute
// and needs the image, so `go test ./scenarios/...` without variables runs
// the simulator suite alone.
//
//	make vllm-image
//	SERVEGATE_TARGET=vllm go test -v ./scenarios/vllm/
package vllm

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest"
	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
)

// TestMain shares each vLLM container among the scenarios with the same
// target block and stops it at the end.
func TestMain(m *testing.M) {
	dockertest.SetDefaults()
	os.Exit(benchtest.Main(m))
}

// requireVLLM skips unless SERVEGATE_TARGET=vllm, and then needs Docker.
func requireVLLM(tb testing.TB) {
	tb.Helper()
	if os.Getenv(scenario.EnvTarget) != scenario.TargetVLLM {
		tb.Skipf("real vLLM scenarios: set %s=%s (`make vllm-image` builds the image for this CPU)", scenario.EnvTarget, scenario.TargetVLLM)
	}
	dockertest.Require(tb)
}

// TestScenarios runs every real-vLLM scenario and asserts its SLOs.
func TestScenarios(t *testing.T) {
	requireVLLM(t)
	benchtest.RunDir(t, ".")
}

// TestTwin runs the twin's calibration set (twin/cal.yaml) and held-out
// set (twin/held.yaml) on one vLLM container (docs/twin.md): their detailed
// results are what `servegate sim calibrate` fits and what
// internal/twin/twin-check.sh compares the twin's predictions with.
//
// It takes about 8 minutes (a capacity search among them), so plain
// `SERVEGATE_TARGET=vllm go test ./scenarios/vllm/` skips it unless
// SERVEGATE_TWIN=1, which twin-check.sh sets.
func TestTwin(t *testing.T) {
	requireVLLM(t)
	if os.Getenv("SERVEGATE_TWIN") != "1" {
		t.Skip("the twin's runs take about 8 minutes: internal/twin/twin-check.sh runs them (or set SERVEGATE_TWIN=1)")
	}
	benchtest.RunDir(t, "twin")
}

// BenchmarkScenarios runs every real-vLLM scenario once per iteration.
func BenchmarkScenarios(b *testing.B) {
	requireVLLM(b)
	benchtest.BenchDir(b, ".")
}

// TestScenarioFiles checks the files without vLLM: every scenario loads,
// runs on the vllm target with the tiny model, and each prefix-caching pair
// (single-shot and multi-turn) differs in the caching flag only, with
// bounds on either side of a gap.
func TestScenarioFiles(t *testing.T) {
	scs, err := scenario.LoadDir(".")
	require.NoError(t, err)
	byName := map[string]*scenario.Scenario{}
	for _, sc := range scs {
		byName[sc.Name] = sc
		assert.Equal(t, scenario.TargetVLLM, sc.Target.Kind, sc.Name)
		assert.Empty(t, sc.Target.Model, "%s: the tiny model (no download)", sc.Name)
		assert.NotEmpty(t, sc.SLO.Bounds, sc.Name)
	}
	assert.Contains(t, byName, "vllm-smoke", "the scenario CI runs")
	bound := func(sc *scenario.Scenario, metric string) scenario.Bound {
		for _, b := range sc.SLO.Bounds {
			if b.Metric == metric {
				return b
			}
		}
		t.Fatalf("%s has no %s bound", sc.Name, metric)
		return scenario.Bound{}
	}
	// The caching pairs: single-shot prompts on shared prefixes, and
	// multi-turn sessions whose later turns resend the history.
	for _, pair := range []struct{ on, off, metric string }{
		{"vllm-prefix-cached", "vllm-prefix-uncached", "median_ttft_ms"},
		{"vllm-multi-turn-cached", "vllm-multi-turn-uncached", "median_ttft_later_turns_ms"},
	} {
		on, off := byName[pair.on], byName[pair.off]
		require.NotNil(t, on, pair.on)
		require.NotNil(t, off, pair.off)
		assert.True(t, slices.Contains(on.Target.Args, "--enable-prefix-caching"), pair.on)
		assert.True(t, slices.Contains(off.Target.Args, "--no-enable-prefix-caching"), pair.off)
		assert.Equal(t, on.Dataset, off.Dataset, pair.on)
		assert.Equal(t, on.Sessions, off.Sessions, pair.on)
		assert.Equal(t, on.Load, off.Load, pair.on)
		assert.Less(t, bound(on, pair.metric).Value, bound(off, pair.metric).Value, "%s: the cached bound lies below the uncached one", pair.on)
	}
	assert.NotNil(t, byName["vllm-multi-turn-cached"].Sessions, "a session scenario")
}

// TestTwinScenarioFiles checks the twin's scenarios without vLLM: they
// load, all run on one vllm target block with the tiny model (one
// container for the whole check), the calibration set has at most 3 runs,
// and every scenario has its own dataset seed, so no run finds another's
// prompts in vLLM's prefix cache.
func TestTwinScenarioFiles(t *testing.T) {
	scs, err := scenario.LoadDir("twin")
	require.NoError(t, err)
	seeds := map[int64]string{}
	var cal, held int
	for _, sc := range scs {
		assert.Equal(t, scenario.TargetVLLM, sc.Target.Kind, sc.Name)
		assert.Empty(t, sc.Target.Model, "%s: the tiny model (no download)", sc.Name)
		assert.Equal(t, scs[0].Target.Args, sc.Target.Args, "%s: one container serves every twin scenario", sc.Name)
		if prev, ok := seeds[sc.Dataset.Seed]; ok {
			t.Errorf("%s: seed %d is also %s's", sc.Name, sc.Dataset.Seed, prev)
		}
		seeds[sc.Dataset.Seed] = sc.Name
		switch {
		case strings.HasPrefix(sc.Name, "twin-cal-"):
			cal++
		case strings.HasPrefix(sc.Name, "twin-ho-"):
			held++
		default:
			t.Errorf("%s: a twin scenario is twin-cal-* or twin-ho-*", sc.Name)
		}
	}
	assert.LessOrEqual(t, cal, 3, "at most 3 calibration runs (docs/twin.md)")
	assert.Positive(t, cal)
	assert.GreaterOrEqual(t, held, 5)
}
