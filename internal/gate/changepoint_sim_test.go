package gate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/gate/accuracy"
	"github.com/servegate/servegate/internal/sim"
	"github.com/servegate/servegate/internal/stats"
)

// History's test commits: 16 "commits" of three runs each, as a CI job
// on main would write them, where every engine step got 20% slower from
// the ninth commit on (the slowdown knob).
const (
	historyCommits  = 16
	historySlowFrom = 8
	historySlowdown = 1.20
)

// historyRun is one run of the accuracy scenario: its metrics by
// benchstat unit. i counts the runs from 0.
type historyRun func(ctx context.Context, slowdown float64, i int) (map[string]float64, error)

// TestHistorySimulator runs change-point mode on the simulator's engine
// in simulated time (sim.Replay): the accuracy scenario's burst of
// accuracy.SimRequests requests, its jitter seeded by the run's number.
// History must name the ninth commit (or a neighbour) as a regression of median
// TTFT. Replay's clock does not read the machine's, so the figures and
// the verdict are the same on every run and every machine: the test
// fails only when the engine or the change-point analysis changed.
func TestHistorySimulator(t *testing.T) {
	p := accuracy.SimParams(t)
	samples := make([]sim.VirtualRequest, accuracy.SimRequests)
	for i := range samples {
		prompt := make([]int, accuracy.SimPromptLen)
		for k := range prompt {
			prompt[k] = 1000 + k
		}
		prompt[accuracy.SimPromptLen-1] = i // one token tells the requests apart, as the HTTP runs' prompts do
		samples[i] = sim.VirtualRequest{Prompt: prompt, MaxTokens: accuracy.SimOutputLen}
	}
	run := func(ctx context.Context, slowdown float64, i int) (map[string]float64, error) {
		q := p
		q.Slowdown = slowdown
		q.Seed = int64(i + 1)
		res, err := sim.Replay(ctx, q, samples, sim.ReplayOptions{})
		if err != nil {
			return nil, err
		}
		return replayMetrics(res)
	}
	checkHistory(t, run)
}

// replayMetrics summarises a replay as the HTTP runs' metrics are: TTFT
// quantiles, goodput (TTFT within accuracy.SimTTFTSLO, per second of the run)
// and the failure ratio.
func replayMetrics(res []sim.VirtualResult) (map[string]float64, error) {
	ttft := make([]float64, 0, len(res))
	var end time.Duration
	good := 0
	for i, r := range res {
		if r.Unsent || len(r.TokenTimes) == 0 {
			return nil, fmt.Errorf("replay: request %d did not finish", i)
		}
		first := r.TokenTimes[0].Seconds()
		ttft = append(ttft, first)
		if first*1000 <= accuracy.SimTTFTSLO {
			good++
		}
		end = max(end, r.Sent+r.TokenTimes[len(r.TokenTimes)-1])
	}
	slices.Sort(ttft)
	return map[string]float64{
		"ttft-p50-sec":  stats.MedianSorted(ttft),
		"ttft-p99-sec":  stats.QuantileSorted(ttft, 0.99),
		"goodput-req/s": float64(good) / end.Seconds(),
		"fail-ratio":    0,
	}, nil
}

// TestHistorySimulatorRealTime is TestHistorySimulator on the in-process
// simulator over HTTP, in real time, as a CI job's runs are measured.
// Its outcome rides on this machine's noise (median TTFT of 16 requests
// in a burst, 48 runs, about 10 s), so it runs only when asked:
// SERVEGATE_ACCURACY_HISTORY=1.
func TestHistorySimulatorRealTime(t *testing.T) {
	if os.Getenv("SERVEGATE_ACCURACY_HISTORY") == "" {
		t.Skip("real-time simulator runs, whose outcome rides on the machine's noise: set SERVEGATE_ACCURACY_HISTORY=1 to run it")
	}
	run := accuracy.SimulatorRun(t)
	checkHistory(t, func(ctx context.Context, slowdown float64, _ int) (map[string]float64, error) {
		return run(ctx, slowdown)
	})
}

// checkHistory writes historyCommits commits of three runs each of run,
// the slower ones from historySlowFrom on, runs change-point mode on
// them with the default policy, and checks that it names the step as a
// regression of median TTFT.
func checkHistory(t *testing.T, run historyRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	n := 0
	for i := range historyCommits {
		s := 1.0
		if i >= historySlowFrom {
			s = historySlowdown
		}
		var b strings.Builder
		fmt.Fprintf(&b, "commit: c%02d\ntarget: inproc\n", i+1)
		for range 3 {
			m, err := run(ctx, s, n)
			require.NoError(t, err)
			n++
			fmt.Fprintf(&b, "BenchmarkScenario/scenario=accuracy 1 %g ttft-p50-sec %g ttft-p99-sec %g fail-ratio %g goodput-req/s\n",
				m["ttft-p50-sec"], m["ttft-p99-sec"], m["fail-ratio"], m["goodput-req/s"])
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.benchfmt", i+1)), []byte(b.String()), 0o644))
	}
	rep, err := RunChangePoints(dir, DefaultPolicy(), historyAlpha)
	require.NoError(t, err)
	var buf strings.Builder
	require.NoError(t, rep.WriteText(&buf))
	t.Logf("load average %s\n%s", accuracy.LoadAverage(), buf.String())
	assert.Equal(t, Fail, rep.Verdict)
	found := false
	for _, s := range rep.Series {
		if s.Unit != "ttft-p50-sec" {
			continue
		}
		found = true
		require.NotEmpty(t, s.Changes, "the 20% step in median TTFT was not found")
		last := s.Changes[len(s.Changes)-1]
		assert.Contains(t, []string{"c08", "c09", "c10"}, last.Commit)
		assert.Equal(t, changeRegression, last.Kind)
	}
	assert.True(t, found, "no ttft-p50-sec series in the report")
}
