package gate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
)

// envAccuracyHealth sets the number of trials of TestAccuracyHarnessHealth
// (unset: skipped); envNeighbour marks the neighbour process.
const (
	envAccuracyHealth = "SERVEGATE_ACCURACY_HEALTH"
	envNeighbour      = "SERVEGATE_NEIGHBOUR"
)

// TestAccuracyHarnessHealth measures the gate against the in-process
// simulator as TestAccuracySimulator does, with and without a noisy
// neighbour (a process this test starts, burning about one core with an
// irregular duty cycle), for (a) every run kept and (b) the harness-health
// rule: a run past the default harness limits (scenario.DefaultHarness) is
// dropped and run again. Each of the four cells collects its own trials.
// It prints the table; SERVEGATE_ACCURACY_HEALTH=<trials> runs it (a
// reduced count: 40 trials per cell take about an hour on two busy cores).
func TestAccuracyHarnessHealth(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envAccuracyHealth))
	if n < 1 {
		t.Skipf("set %s=<trials> to run", envAccuracyHealth)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	run := simulatorRun(t)
	for _, s := range []float64{1, 1.10} {
		_, err := run(ctx, s)
		require.NoError(t, err)
	}
	var lines []string
	for _, neighbour := range []bool{false, true} {
		where := "ambient"
		if neighbour {
			startNeighbour(t)
			where = "ambient + neighbour"
		}
		for _, rule := range []string{"a", "b"} {
			r, dropped := run, new(int)
			if rule == "b" {
				r = healthyRun(run, dropped)
			}
			load0 := loadAverage()
			start := time.Now()
			trials := collectTrials(ctx, t, r, n, 10, 1.10)
			res := gateAccuracy(ctx, t, trials, []int{10}, DefaultPolicy(), "ttft-p99-sec")
			lines = append(lines, fmt.Sprintf("(%s) %-19s load %s→%s, %v, %d runs dropped as invalid: %s",
				rule, where, load0, loadAverage(), time.Since(start).Round(time.Second), *dropped, res[0]))
		}
		if neighbour {
			stopNeighbours()
		}
	}
	t.Logf("gate accuracy, %d trials per cell, count 10, default policy; (a) every run kept, (b) harness-health rule:\n%s", n, strings.Join(lines, "\n"))
}

// healthyRun applies the harness-health rule to run: a run whose load
// generator broke a default harness limit is dropped (counted in dropped)
// and run again, up to 20 times.
func healthyRun(run runFunc, dropped *int) runFunc {
	limits := map[string]float64{
		"lateness-p99-sec":      scenario.DefaultHarness.MaxLatenessP99.D().Seconds(),
		"client-cpu-ratio":      scenario.DefaultHarness.MaxCPU,
		"sched-latency-p99-sec": scenario.DefaultHarness.MaxSchedLatencyP99.D().Seconds(),
	}
	return func(ctx context.Context, slowdown float64) (map[string]float64, error) {
		for range 20 {
			m, err := run(ctx, slowdown)
			if err != nil {
				return nil, err
			}
			ok := true
			for unit, max := range limits {
				v, found := m[unit]
				ok = ok && found && v <= max
			}
			if ok {
				return m, nil
			}
			*dropped++
		}
		return nil, fmt.Errorf("20 runs in a row broke the harness limits")
	}
}

var neighbours []*exec.Cmd

// startNeighbour starts this test binary as a noisy neighbour
// (TestNeighbour), stopped by stopNeighbours or at the end of t.
func startNeighbour(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNeighbour$")
	cmd.Env = append(os.Environ(), envNeighbour+"=1")
	require.NoError(t, cmd.Start())
	neighbours = append(neighbours, cmd)
	t.Cleanup(stopNeighbours)
	time.Sleep(time.Second)
}

// stopNeighbours kills the neighbour processes this test started.
func stopNeighbours() {
	for _, c := range neighbours {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	neighbours = nil
}

// TestNeighbour is the noisy neighbour: two workers alternate busy
// spells of 10-150 ms and idle ones of 0-150 ms at random (about half a
// core each) until killed. It runs only as the process startNeighbour
// starts.
func TestNeighbour(t *testing.T) {
	if os.Getenv(envNeighbour) == "" {
		t.Skip("only as a neighbour process")
	}
	for range 2 {
		go func() {
			for {
				end := time.Now().Add(time.Duration(10+rand.IntN(140)) * time.Millisecond)
				for time.Now().Before(end) {
				}
				time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
			}
		}()
	}
	select {}
}

// loadAverage is the one-minute load average, "?" when unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
