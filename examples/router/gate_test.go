package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/benchtest"
	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/ci/gate"
	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/generic"
)

// gateRuns is the number of runs per side. 6 would do on a quiet machine
// (the smallest p-value of the U test is 2/C(12,6) = 0.002); 10 leave room
// for the runs a busy machine's hiccups put out of order.
const gateRuns = 10

const childGateEnv = "SERVEGATE_CHILD_ROUTER_GATE"

// TestRouterGate is the story of examples/router/README.md: the base
// router and a head router that adds 20 ms to every request
// (ROUTER_EXTRA_DELAY=20ms), each in front of two simulator replicas,
// measured 10 times each, interleaved, then gated. The gate must exit 1 on
// ttft-p99-sec.
func TestRouterGate(t *testing.T) {
	if os.Getenv(childGateEnv) == "1" {
		t.Skip("this is the child process")
	}
	if testing.Short() {
		t.Skip("12 measured runs; skipped with -short")
	}
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := buildContext(t)
	start := func(delay string) string {
		ctr, err := generic.Run(ctx, generic.Spec{
			Build: &generic.Build{Context: build},
			Port:  8080,
			Env:   map[string]string{"ROUTER_EXTRA_DELAY": delay},
			Backends: []generic.Backend{{Kind: "sim", Replicas: 2, Knobs: map[string]string{
				"max_num_seqs": "4", "step_fixed_ms": "10", "prefill_token_us": "5", "seq_us": "100", "jitter": "0",
			}}},
		})
		testcontainers.CleanupContainer(t, ctr)
		require.NoError(t, err)
		u, err := ctr.BaseURL(ctx)
		require.NoError(t, err)
		return u
	}
	urls := map[string]string{"base": start("0s"), "head": start("20ms")}

	out := t.TempDir()
	files := map[string]*bytes.Buffer{"base": {}, "head": {}}
	for i := range gateRuns {
		for _, side := range []string{"base", "head"} {
			dir := filepath.Join(out, fmt.Sprintf("%s-%d", side, i))
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildRouterLoad$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), childGateEnv+"=1",
				scenario.EnvTarget+"=url", scenario.EnvURL+"="+urls[side], scenario.EnvOut+"="+dir)
			b, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s run %d:\n%s", side, i, b)
			data, err := os.ReadFile(filepath.Join(dir, "test.benchfmt"))
			require.NoError(t, err)
			files[side].Write(data)
			t.Logf("%s run %d: ttft-p99 %s", side, i, field(data, "ttft-p99-sec"))
		}
	}
	var args []string
	for _, side := range []string{"base", "head"} {
		path := filepath.Join(out, side+".benchfmt")
		require.NoError(t, os.WriteFile(path, files[side].Bytes(), 0o644))
		args = append(args, path)
	}
	var stdout, stderr bytes.Buffer
	code := gate.Main(ctx, args, &stdout, &stderr)
	t.Logf("servegate gate base.benchfmt head.benchfmt: exit %d\n%s%s", code, stdout.String(), stderr.String())
	assert.Equal(t, gate.ExitRegression, code, "the 20 ms router must fail the gate")
	assert.Regexp(t, `ttft-p99-sec.*\n(.*\n)*.*FAIL|FAIL.*ttft-p99-sec`, stdout.String())
}

// TestChildRouterLoad is the child of TestRouterGate: one measured run.
func TestChildRouterLoad(t *testing.T) {
	if os.Getenv(childGateEnv) != "1" {
		t.Skip("run by TestRouterGate in a child process")
	}
	benchtest.RunDir(t, filepath.Join("testdata", "gate"))
}

// field returns the value before unit on a benchfmt result line of data.
func field(data []byte, unit string) string {
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		for i := 1; i < len(f); i++ {
			if f[i] == unit && strings.HasPrefix(line, "Benchmark") {
				return f[i-1]
			}
		}
	}
	return "?"
}
