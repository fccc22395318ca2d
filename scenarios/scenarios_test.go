// Package scenarios holds servegate's shipped scenario files and the test
// that runs every one of them against the default target (the simulator
// container; SERVEGATE_TARGET and friends override it):
//
//	go test ./scenarios/...                       # SLOs asserted, one subtest per scenario
//	go test -v ./scenarios/...                    # ... and every SLO table printed
//	go test -run '^$' -bench . -benchtime=1x -count=10 ./scenarios/...   # benchstat samples
package scenarios

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest"
	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
)

// TestMain shares each target among all tests and benchmarks of the
// package, across -count repetitions, and stops it at the end.
func TestMain(m *testing.M) {
	dockertest.SetDefaults()
	os.Exit(benchtest.Main(m))
}

// requireTarget makes a missing Docker daemon a clear failure (or a skip
// with SERVEGATE_SKIP_DOCKER=1) when the scenarios run on containers.
func requireTarget(tb testing.TB) {
	tb.Helper()
	switch os.Getenv(scenario.EnvTarget) {
	case "", scenario.TargetSim, scenario.TargetVLLM:
		dockertest.Require(tb)
	}
}

// TestScenarios runs every shipped scenario and asserts its SLOs.
func TestScenarios(t *testing.T) {
	requireTarget(t)
	benchtest.RunDir(t, ".")
}

// BenchmarkScenarios runs every shipped scenario once per iteration.
func BenchmarkScenarios(b *testing.B) {
	requireTarget(b)
	benchtest.BenchDir(b, ".")
}

// TestViolatedSLOFails runs a scenario whose TTFT bound no server can meet
// in a child test process and checks that the child fails, and that its
// output alone says what broke.
func TestViolatedSLOFails(t *testing.T) {
	if os.Getenv("SERVEGATE_CHILD_VIOLATED") == "1" {
		t.Skip("this is the child process")
	}
	// The caller's overrides must not reach the child (SERVEGATE_MODEL
	// once did: the child ran with the caller's model).
	t.Setenv(scenario.EnvModel, "leaked/model")
	t.Setenv(scenario.EnvImage, "leaked/image:1")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildViolated$", "-test.v", "-test.count=1")
	cmd.Env = append(withoutServegateEnv(os.Environ()),
		"SERVEGATE_CHILD_VIOLATED=1",
		scenario.EnvTarget+"=inproc",
		scenario.EnvOut+"="+t.TempDir(),
	)
	outb, err := cmd.CombinedOutput()
	output := string(outb)
	t.Logf("child output:\n%s", output)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the child must fail")
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, output, "--- FAIL: TestChildViolated/scenario=impossible")
	assert.Regexp(t, `SLO violated in scenario impossible: p99_ttft_ms = [0-9.e+-]+, want <= 0\.001`, output)
	assert.Regexp(t, `p99_ttft_ms\s+<= 0\.001\s+[0-9.e+-]+\s+FAIL`, output, "the SLO table marks the bound")
	assert.Regexp(t, `failed\s+== 0\s+0\s+PASS`, output, "every SLO is reported, passing ones too")
	assert.NotContains(t, output, "SLO violated in scenario impossible: failed")
	assert.NotContains(t, output, "leaked/", "no SERVEGATE_* setting of the caller reaches the child")
}

// withoutServegateEnv drops every SERVEGATE_* setting (SERVEGATE_MODEL,
// SERVEGATE_IMAGE, ...) so that the caller's overrides cannot change what a
// child test process runs.
func withoutServegateEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SERVEGATE_") {
			out = append(out, kv)
		}
	}
	return out
}

// TestChildViolated is the child of TestViolatedSLOFails.
func TestChildViolated(t *testing.T) {
	if os.Getenv("SERVEGATE_CHILD_VIOLATED") != "1" {
		t.Skip("run by TestViolatedSLOFails in a child process")
	}
	benchtest.RunDir(t, filepath.Join("testdata", "violated"))
}

// TestScenarioFiles checks that every shipped file loads and that the
// documented arrival patterns are all shipped.
func TestScenarioFiles(t *testing.T) {
	scs, err := scenario.LoadDir(".")
	require.NoError(t, err)
	var names []string
	have := map[string]bool{}
	for _, sc := range scs {
		names = append(names, sc.Name)
		require.NotEmpty(t, sc.SLO.Bounds, "scenario %s has no SLO", sc.Name)
		l := sc.Load
		switch {
		case l.RampUp != nil:
			have["ramp-up"] = true
		case l.MaxConcurrency > 0:
			have["max-concurrency"] = true
		case l.Burstiness < 1:
			have["bursty"] = true
		case l.Burstiness == 1 && !strings.Contains(sc.Name, "prefix"):
			have["poisson"] = true
		}
		if sc.Dataset.Name == "prefix_repetition" {
			have["prefix"] = true
		}
		if sc.Capacity != nil {
			have["capacity"] = true
		}
		if s := sc.Sessions; s != nil {
			have["sessions"] = true
			if s.Tools != nil {
				have["tools"] = true
			}
		}
	}
	assert.Equal(t, []string{"agent-tools", "capacity", "chat-poisson", "completions-bursty", "multi-turn-chat", "prefix-cached", "prefix-uncached", "ramp-up-linear", "reasoning", "responses-api", "saturation"}, names)
	assert.Equal(t, map[string]bool{"ramp-up": true, "max-concurrency": true, "bursty": true, "poisson": true, "prefix": true, "capacity": true, "sessions": true, "tools": true}, have)
}
