package twin

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/sim"
)

// knownServer is the "real" server of the end-to-end test: the
// simulator's engine with costs the calibration does not see, and
// jitter.
func knownServer() sim.Params {
	p := sim.DefaultParams()
	p.Model = "acme/known-8b"
	p.MaxModelLen, p.MaxNumSeqs, p.MaxNumBatchedTokens = 4096, 16, 2048
	p.BlockSize, p.NumKVBlocks, p.EnablePrefixCaching = 16, 4096, true
	p.StepFixedMS, p.PrefillTokenUS, p.SeqUS, p.ContextTokenNS = 20, 150, 1500, 800
	p.FrontendMS, p.FrontendSerialMS = 15, 3
	p.Jitter, p.Seed = 0.03, 11
	return p
}

// calibrationRuns are three short runs of different load: a light
// Poisson run, a closed loop of 4, and a heavy run that queues past the
// batch limit.
var calibrationRuns = []workload{
	{name: "light", n: 40, rate: 2, promptLo: 64, hiP: 512, outLo: 16, outHi: 64, seed: 1},
	{name: "closed4", n: 40, promptLo: 128, hiP: 256, outLo: 24, outHi: 40, maxConcurrency: 4, seed: 2},
	{name: "heavy", n: 60, rate: 10, promptLo: 32, hiP: 1024, outLo: 8, outHi: 48, seed: 3},
}

// TestCalibrateRecoversKnownServer is the acceptance test of the fit: runs
// replayed (sim.Replay, the engine's virtual clock) against a server whose
// costs are known are saved as detailed result files like a vllm target's,
// calibrated from the files, and the fit must give back the costs, the
// jitter, and figures within the goal; the fitted profile must then
// predict a held-out run it never saw.
func TestCalibrateRecoversKnownServer(t *testing.T) {
	if testing.Short() {
		t.Skip("fits three runs: a few seconds")
	}
	truth := knownServer()
	dir := t.TempDir()
	var runs []*Run
	for _, w := range calibrationRuns {
		recs, dur := replayed(t, truth, w)
		f := resultFile{model: truth.Model, maxConcurrency: w.maxConcurrency, target: "vllm", detailed: true, appendix: []metrics.Field{
			serverMetrics(recs),
			vllmConfig(truth.NumKVBlocks, "--max-num-seqs", "16", "--max-num-batched-tokens", "2048", "--max-model-len", "4096"),
		}}
		r, err := ReadRunFile(f.write(t, dir, w.name+".json", recs, dur))
		require.NoError(t, err)
		runs = append(runs, r)
	}
	res, err := Calibrate(t.Context(), runs, Options{})
	require.NoError(t, err)
	var report strings.Builder
	res.WriteReport(&report)
	t.Log("\n" + report.String())

	require.True(t, res.Met, "median errors %v", res.MedianErr)
	// The known server's client sent each request of the closed loop
	// when a slot freed, so replayed under its limit or at its measured
	// starts the run is the same: either may fit a hair better.
	assert.Equal(t, "open loop", res.Runs[0].Replay)
	assert.Contains(t, []string{"closed loop of 4", "open loop (closer than a closed loop of 4)"}, res.Runs[1].Replay)
	assert.Equal(t, "open loop", res.Runs[2].Replay)
	for _, run := range res.Runs {
		for i, e := range run.RelErr() {
			assert.Less(t, math.Abs(e), 0.15, "%s %s", filepath.Base(run.Path), FigureNames[i])
		}
	}
	got := res.Params
	for _, tc := range []struct {
		key string
		tol float64
	}{{"step_fixed_ms", 0.15}, {"prefill_token_us", 0.15}, {"seq_us", 0.4}} {
		k := costKnobOf(tc.key)
		assert.InEpsilon(t, k.get(&truth), k.get(&got), tc.tol, "%s", tc.key)
	}
	// Three short runs tell the per-sequence cost from the per-context-
	// token one only roughly (a batch's context grows with its size), so
	// the context cost is checked where it matters, in a full batch's
	// decode step: 16 sequences of 500 tokens of context.
	step := func(p sim.Params) float64 { return p.StepFixedMS + 16*p.SeqUS/1e3 + 16*500*p.ContextTokenNS/1e6 }
	assert.InEpsilon(t, step(truth), step(got), 0.1, "a full batch's decode step, ms")
	// The front end: what a lone request waits before the engine sees it.
	front := func(p sim.Params) float64 { return p.FrontendMS + p.FrontendSerialMS }
	assert.InEpsilon(t, front(truth), front(got), 0.25, "a lone request's time in the front end, ms")
	assert.InDelta(t, truth.Jitter, got.Jitter, 0.01, "jitter")
	assert.Equal(t, truth.MaxNumSeqs, got.MaxNumSeqs)
	assert.Equal(t, truth.NumKVBlocks, got.NumKVBlocks)

	// A held-out run: another rate, other lengths, a concurrency limit.
	held := workload{name: "held", n: 60, rate: 6, promptLo: 256, hiP: 768, outLo: 32, outHi: 96, maxConcurrency: 12, seed: 9}
	measured, _ := replayed(t, truth, held)
	predicted, _ := replayed(t, got, held)
	m, p := figuresOf(measured), figuresOf(predicted)
	for i, name := range FigureNames {
		assert.InEpsilon(t, m.values()[i], p.values()[i], 0.15, "held-out %s: measured %.2f ms, predicted %.2f ms", name, m.values()[i], p.values()[i])
	}
}

// figuresOf are the headline figures of records.
func figuresOf(recs []metrics.Record) Figures {
	var times [][]float64
	for _, r := range recs {
		times = append(times, measuredOf(r).chunkAt)
	}
	return figures(times)
}

// TestReplayIsDeterministic: the fit relies on a replay without jitter
// giving the same times every time.
func TestReplayIsDeterministic(t *testing.T) {
	p := knownServer()
	p.Jitter = 0
	reqs := calibrationRuns[0].requests()
	a, err := sim.Replay(context.Background(), p, reqs, sim.ReplayOptions{})
	require.NoError(t, err)
	b, err := sim.Replay(context.Background(), p, reqs, sim.ReplayOptions{})
	require.NoError(t, err)
	require.Equal(t, a, b)
}
