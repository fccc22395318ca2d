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
	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/generic"
	"github.com/servegate/servegate/internal/gate"
)

// gateRuns is the number of runs per side and round. 6 would do on a quiet
// machine (the smallest p-value of the U test is 2/C(12,6) = 0.002); 10
// leave room for the runs a busy machine's hiccups put out of order.
const gateRuns = 10

// gateRounds bounds the rounds: when the gate passes, another round of
// runs joins the samples, as a reviewer would rerun a noisy comparison
// with a higher -count. A machine saturated by other tests (the whole
// suite on two cores) can drown 20 ms in its scheduling noise for a round
// or two; a router whose delay knob did nothing passes every round.
const gateRounds = 3

const childGateEnv = "SERVEGATE_CHILD_ROUTER_GATE"

// TestRouterGate is the story of examples/router/README.md: the base
// router and a head router that adds 20 ms to every request
// (ROUTER_EXTRA_DELAY=20ms), each in front of two simulator replicas,
// measured 10 times each, interleaved, then gated (with 10 more runs a
// side when the gate passes, up to 30). The gate must exit 1 on
// ttft-p99-sec.
//
// It runs only when asked (SERVEGATE_ROUTER_GATE=1): it judges a p99 on
// a machine the rest of the suite shares, and no arithmetic bounds its
// miss rate below 1 in 1000 there.
func TestRouterGate(t *testing.T) {
	if os.Getenv(childGateEnv) == "1" {
		t.Skip("this is the child process")
	}
	if os.Getenv("SERVEGATE_ROUTER_GATE") != "1" {
		t.Skip("20 to 60 measured runs judged on a p99, whose outcome rides on the machine's noise; SERVEGATE_ROUTER_GATE=1 runs it")
	}
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
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
	var code int
	var stdout, stderr bytes.Buffer
	for round := range gateRounds {
		for i := round * gateRuns; i < (round+1)*gateRuns; i++ {
			for _, side := range []string{"base", "head"} {
				data := measure(ctx, t, urls[side], filepath.Join(out, fmt.Sprintf("%s-%d", side, i)))
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
		stdout.Reset()
		stderr.Reset()
		code = gate.Main(ctx, args, &stdout, &stderr)
		t.Logf("servegate gate base.benchfmt head.benchfmt after %d runs a side: exit %d\n%s%s",
			(round+1)*gateRuns, code, stdout.String(), stderr.String())
		if code != gate.ExitPass {
			break // a regression, or bad input: never measured away
		}
	}
	require.Equal(t, gate.ExitRegression, code, "the 20 ms router must fail the gate")
	assert.Regexp(t, `ttft-p99-sec \(gated[^\n]*\n[^\n]*\n[^\n]*FAIL: regression`, stdout.String(), "on ttft-p99-sec")
}

// measure runs the gate scenario once against url in a child test process
// writing to dir, and returns its benchfmt result.
func measure(ctx context.Context, t *testing.T, url, dir string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildRouterLoad$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childGateEnv+"=1",
		scenario.EnvTarget+"=url", scenario.EnvURL+"="+url, scenario.EnvOut+"="+dir)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "run against %s:\n%s", url, b)
	data, err := os.ReadFile(filepath.Join(dir, "test.benchfmt"))
	require.NoError(t, err)
	return data
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
