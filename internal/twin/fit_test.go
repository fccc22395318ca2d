package twin

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/sim"
)

// TestNelderMead: the optimiser finds Rosenbrock's valley floor, and a
// minimum outside the bounds at the bound.
func TestNelderMead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      func(x []float64) float64
		lo, hi []float64
		want   []float64
	}{
		{"rosenbrock", func(x []float64) float64 { return 100*math.Pow(x[1]-x[0]*x[0], 2) + math.Pow(1-x[0], 2) },
			[]float64{-5, -5}, []float64{5, 5}, []float64{1, 1}},
		{"bounded", func(x []float64) float64 { return math.Pow(x[0]+3, 2) + math.Pow(x[1]-2, 2) },
			[]float64{-1, -5}, []float64{5, 5}, []float64{-1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := func(x []float64) (float64, error) { return tc.f(x), nil }
			x, v, err := nelderMead(f, []float64{-1.2, 1}, []float64{0.5, 0.5}, tc.lo, tc.hi, 4000)
			require.NoError(t, err)
			for i := range x {
				assert.InDelta(t, tc.want[i], x[i], 0.02, "x[%d] (f=%g)", i, v)
			}
		})
	}
}

// fakeReplay is a closed-form stand-in for the engine, for testing the
// optimiser alone: request i runs as if among 1+i%4 sequences, behind
// i%3 others in the front end; its first token comes after the front
// end's time and a fixed, a per-prompt-token and a per-sequence cost,
// each later token after a fixed, a per-sequence and a per-context-token
// cost.
func fakeReplay(_ context.Context, p sim.Params, reqs []sim.VirtualRequest, _ sim.ReplayOptions) ([]sim.VirtualResult, error) {
	out := make([]sim.VirtualResult, len(reqs))
	for i, q := range reqs {
		k := float64(1 + i%4)
		ms := p.FrontendMS + p.FrontendSerialMS*float64(1+i%3) +
			p.StepFixedMS + p.PrefillTokenUS*float64(len(q.Prompt))/1e3 + p.SeqUS*k/1e3
		at := time.Duration(ms * 1e6)
		times := []time.Duration{at}
		for j := 1; j < q.MaxTokens; j++ {
			ms := p.StepFixedMS + p.SeqUS*k/1e3 + p.ContextTokenNS*float64(len(q.Prompt)+j)*k/1e6
			at += time.Duration(ms * 1e6)
			times = append(times, at)
		}
		out[i] = sim.VirtualResult{Sent: q.Arrival, TokenTimes: times}
	}
	return out, nil
}

// fakeRun is a run "measured" on fakeReplay with p.
func fakeRun(tb testing.TB, p sim.Params) *Run {
	tb.Helper()
	reqs := workload{n: 48, rate: 4, promptLo: 32, hiP: 600, outLo: 8, outHi: 40, seed: 3}.requests()
	res, err := fakeReplay(context.Background(), p, reqs, sim.ReplayOptions{})
	require.NoError(tb, err)
	recs, dur := recordsOf(reqs, res)
	return &Run{Path: "fake.json", Records: recs, Duration: dur, ModelID: "fake/model"}
}

func trueCosts() sim.Params {
	p := sim.DefaultParams()
	p.StepFixedMS, p.PrefillTokenUS, p.SeqUS, p.ContextTokenNS = 15, 120, 800, 500
	p.FrontendMS, p.FrontendSerialMS = 12, 4
	return p
}

// TestFitRecoversFakeCosts: on the closed-form engine, where every knob
// shows in the data, the fit recovers the six costs and no jitter.
func TestFitRecoversFakeCosts(t *testing.T) {
	want := trueCosts()
	res, err := Calibrate(t.Context(), []*Run{fakeRun(t, want)}, Options{Replay: fakeReplay, MaxEvals: 1500})
	require.NoError(t, err)
	for _, k := range costKnobs {
		assert.InEpsilon(t, k.get(&want), k.get(&res.Params), 0.05, "%s", k.key)
	}
	assert.True(t, res.Met, "median errors %v", res.MedianErr)
	assert.Less(t, res.Params.Jitter, 0.01, "the fake engine has no noise")
	assert.Empty(t, res.Unpinned)
}

// TestFitThatMissesSaysSo: an engine no knob moves cannot match the run;
// the result says it missed, and so does the profile's first line.
func TestFitThatMissesSaysSo(t *testing.T) {
	stuck := func(_ context.Context, _ sim.Params, reqs []sim.VirtualRequest, _ sim.ReplayOptions) ([]sim.VirtualResult, error) {
		out := make([]sim.VirtualResult, len(reqs))
		for i, q := range reqs {
			for j := range q.MaxTokens {
				out[i].TokenTimes = append(out[i].TokenTimes, time.Duration(j+1)*time.Millisecond)
			}
		}
		return out, nil
	}
	res, err := Calibrate(t.Context(), []*Run{fakeRun(t, trueCosts())}, Options{Replay: stuck, MaxEvals: 60})
	require.NoError(t, err)
	assert.False(t, res.Met)
	for _, e := range res.MedianErr {
		assert.Greater(t, e, Goal)
	}
	prof := string(res.Profile(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)))
	assert.True(t, strings.HasPrefix(prof, "# THIS FIT MISSED THE GOAL"), prof)
	assert.Len(t, res.Misses(), len(FigureNames), "every figure of the run is off")
	assert.Contains(t, prof, "# Warning: fake.json: median TTFT off by")
	// Every knob the engine ignores is flat or at a bound: not pinned down.
	assert.Len(t, res.Unpinned, len(costKnobs))
}

// TestProfileRoundTrip: the written profile loads as the simulator's own
// and gives back the fitted values (to four significant digits).
func TestProfileRoundTrip(t *testing.T) {
	res, err := Calibrate(t.Context(), []*Run{fakeRun(t, trueCosts())}, Options{Replay: fakeReplay, MaxEvals: 300, Model: "my/model: v1"})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "twin.yaml")
	require.NoError(t, os.WriteFile(path, res.Profile(time.Now()), 0o644))
	got, err := sim.LoadProfile(path)
	require.NoError(t, err)
	require.NoError(t, got.Validate())
	assert.Equal(t, "my/model: v1", got.Model)
	for _, k := range costKnobs {
		assert.InEpsilon(t, k.get(&res.Params)+1e-9, k.get(&got)+1e-9, 1e-3, "%s", k.key)
	}
	assert.Equal(t, res.Params.MaxNumSeqs, got.MaxNumSeqs)
	assert.Equal(t, res.Params.NumKVBlocks, got.NumKVBlocks)
	assert.InDelta(t, res.Params.Jitter, got.Jitter, 1e-9)
}

func TestNum(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{{0, "0"}, {12.3456, "12.35"}, {0.000123456, "0.0001235"}, {123456, "123500"}, {1, "1"}} {
		assert.Equal(t, tc.want, num(tc.in), "%v", tc.in)
	}
}

// TestEigenSym: the curvature analysis's eigen-decomposition.
func TestEigenSym(t *testing.T) {
	vals, vecs := eigenSym([][]float64{{2, 1, 0}, {1, 2, 0}, {0, 0, 5}})
	byVal := map[int]int{}
	for e, v := range vals {
		byVal[int(math.Round(v))] = e
	}
	require.Len(t, byVal, 3, "%v", vals)
	for _, want := range []int{1, 3, 5} {
		assert.Contains(t, byVal, want, "%v", vals)
	}
	e := byVal[1] // (1, -1, 0)/√2: the trade between the first two
	assert.InDelta(t, 0, vecs[0][e]+vecs[1][e], 1e-9)
	assert.InDelta(t, 1/math.Sqrt2, math.Abs(vecs[0][e]), 1e-9)
	assert.InDelta(t, 0, vecs[2][e], 1e-9)
}
