package gate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/stats"
)

// pairOpts shape the synthetic paired result files of writePairRuns.
type pairOpts struct {
	// SLO is the goodput SLO on TTFT in seconds (0: no goodput).
	SLO float64
	// HeadLoseGood marks this share of head's good requests as missing
	// the SLO (a goodput regression with TTFT unchanged).
	HeadLoseGood float64
	// HeadFails fails this many more requests of head per pair.
	HeadFails int
	// TPOT writes latencies and output lengths (64 tokens), so that the
	// files carry TPOT: a fifth of the request's TTFT per token, times
	// HeadTPOT on head's side (a decode slowdown; 0 means 1).
	TPOT     bool
	HeadTPOT float64
}

// writePairRuns writes the detailed result files of paired runs of m with
// head slower by effect, shaped by o, and returns BASE1 HEAD1 ...
func writePairRuns(t *testing.T, m noiseModel, effect float64, pairs int, seed uint64, o pairOpts) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	dir := t.TempDir()
	var files []string
	for k := 1; k <= pairs; k++ {
		run := m.run(rng, effect)
		lose := make([]bool, len(run))
		for i := range lose {
			lose[i] = rng.Float64() < o.HeadLoseGood
		}
		for _, side := range []string{"base", "head"} {
			n := len(run)
			ttfts, errs, sched, good := make([]float64, n), make([]string, n), make([]float64, n), make([]bool, n)
			count := 0
			for i, p := range run {
				ttfts[i], sched[i] = p.Base, p.Start
				if side == "head" {
					ttfts[i] = p.Head
					if i%7 == 3 && i/7 < o.HeadFails {
						errs[i] = "stream_error: reset"
					}
				}
				if i == 5 {
					errs[i] = "stream_error: reset" // one failed request a run on both sides
				}
				good[i] = errs[i] == "" && ttfts[i] <= o.SLO && !(side == "head" && lose[i])
				if good[i] {
					count++
				}
			}
			const duration = 40.0
			js := map[string]any{"ttfts": ttfts, "errors": errs, "start_times": sched, "scheduled_times": sched, "duration": duration}
			if o.TPOT {
				const out = 64
				lat, outs := make([]float64, n), make([]int, n)
				for i, p := range run {
					tpot := p.Base / 5
					if side == "head" {
						tpot = p.Head / 5 * cmp.Or(o.HeadTPOT, 1)
					}
					lat[i], outs[i] = ttfts[i]+tpot*(out-1), out
				}
				js["latencies"], js["output_lens"] = lat, outs
			}
			if o.SLO > 0 {
				js["request_goodput"] = float64(count) / duration
				js["goodput_met"] = good
			}
			data, err := json.Marshal(js)
			require.NoError(t, err)
			f := filepath.Join(dir, fmt.Sprintf("%s-%d.json", side, k))
			require.NoError(t, os.WriteFile(f, data, 0o644))
			files = append(files, f)
		}
	}
	return files
}

// TestMainSequentialFigures checks that gate -sequential gates goodput
// and fail-ratio as well as p99 TTFT, and says which figure decided.
func TestMainSequentialFigures(t *testing.T) {
	slo := pairOpts{SLO: 0.06} // about 70% of the requests meet it
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"clean with goodput", writePairRuns(t, lowNoise, 0, 8, 1, slo), ExitPass, "verdict: no regression after 4 pairs (95% bounds: ttft-p50-sec rules out slowdowns above"},
		{"TPOT judged", writePairRuns(t, lowNoise, 0, 8, 1, pairOpts{SLO: 0.06, TPOT: true}), ExitPass, "PASS tpot-p50-sec: "},
		{"decode slower alone", writePairRuns(t, lowNoise, 0, 8, 1, pairOpts{SLO: 0.06, TPOT: true, HeadTPOT: 1.08}), ExitRegression, "verdict: regression of tpot-p50-sec after 3 pairs"},
		{"goodput regression alone", writePairRuns(t, lowNoise, 0, 8, 2, pairOpts{SLO: 0.06, HeadLoseGood: 0.10}), ExitRegression, "verdict: regression of goodput-req/s after"},
		{"failures on head", writePairRuns(t, lowNoise, 0, 8, 3, pairOpts{HeadFails: 12}), ExitRegression, "verdict: regression of fail-ratio after 1 pairs"},
		{"a few failures are noise", writePairRuns(t, lowNoise, 0, 8, 4, pairOpts{HeadFails: 2}), ExitPass, "PASS fail-ratio: base 3, head 9 failed of 600 requests"},
		{"steady-state window", append([]string{"-steady-state", "0.1"}, writePairRuns(t, lowNoise, 0, 8, 5, slo)...), ExitPass, "p99 TTFT +5.56% (±2.4%), 158 request pairs, 0 left out (failed)"},
		{"window past its limit", append([]string{"-steady-state", "0.5"}, writePairRuns(t, lowNoise, 0, 3, 6, slo)...), ExitBadInput, "steady-state window 0.5: want a fraction of the schedule in [0, 0.4]"},
		{"goodput on one side only", append(writePairRuns(t, lowNoise, 0, 1, 7, slo)[:1], writePairRuns(t, lowNoise, 0, 1, 7, pairOpts{})[1]), ExitBadInput, "only one side reports request_goodput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runHistoryMain(t, append([]string{"-sequential"}, tt.args...)...)
			t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Equal(t, tt.code, code)
			require.Contains(t, out+errOut, tt.out)
		})
	}
	// -steady-state belongs to -sequential.
	code, _, errOut := runHistoryMain(t, "-steady-state", "0.1", "a", "b")
	require.Equal(t, ExitBadInput, code)
	require.Contains(t, errOut, "-steady-state 0.1: only with -sequential")
}

// TestMainSequentialMarkdown checks the Markdown of the verdict.
func TestMainSequentialMarkdown(t *testing.T) {
	md := filepath.Join(t.TempDir(), "gate.md")
	files := writePairRuns(t, lowNoise, 0.25, 8, 8, pairOpts{SLO: 0.06})
	code, out, errOut := runHistoryMain(t, append([]string{"-sequential", "-markdown", md}, files...)...)
	require.Equal(t, ExitRegression, code, out+errOut)
	data, err := os.ReadFile(md)
	require.NoError(t, err)
	t.Logf("%s", data)
	require.Contains(t, string(data), "**❌ regression** after 3 pair(s): regression of ttft-p50-sec after 3 pairs")
	require.Contains(t, string(data), "| `ttft-p99-sec` | regression | 3 | +2")
	require.Contains(t, string(data), "| `fail-ratio` | no significant rise | 3 | base 3, head 3 of 600 |")
}

func TestSignTestP(t *testing.T) {
	for _, tt := range []struct {
		head, base int
		want       float64
	}{
		{0, 0, 1}, {0, 5, 1}, {1, 0, 0.5}, {10, 0, math.Pow(2, -10)}, {3, 1, 5.0 / 16}, {2, 2, 11.0 / 16},
	} {
		require.InDelta(t, tt.want, stats.SignTestP(tt.head, tt.base), 1e-12, "%d head only, %d base only", tt.head, tt.base)
	}
}

func TestPairRunWindow(t *testing.T) {
	var run PairRun
	for i := range 11 {
		run.Requests = append(run.Requests, PairedRequest{Start: float64(i)})
	}
	run.BaseDuration, run.HeadDuration = 12, 13
	w, err := run.Window(0.2)
	require.NoError(t, err)
	require.Len(t, w.Requests, 7) // scheduled 2..8 of 0..10
	require.Equal(t, 2.0, w.Requests[0].Start)
	require.Zero(t, w.durationLogRatio(), "a window's span is the same on both sides")
	require.InDelta(t, math.Log(12.0/13), run.durationLogRatio(), 1e-12)
	same, err := run.Window(0)
	require.NoError(t, err)
	require.Len(t, same.Requests, 11)
	for _, bad := range []float64{-0.1, 0.41, math.NaN()} {
		_, err := run.Window(bad)
		require.Error(t, err, "%v", bad)
	}
}

func TestBootstrapCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pairs := make([]RequestPair, 200)
	for i := range pairs {
		b := weight(rng.Float64() < 0.7)
		pairs[i] = RequestPair{Start: float64(i), Base: b, Head: b}
	}
	// Head identical: no change, no spread.
	e, err := BootstrapCount(pairs, 0, 200, 0, rng)
	require.NoError(t, err)
	require.Zero(t, e.D)
	require.Zero(t, e.SE)
	// Head's weights scaled: the log ratio moves by exactly the scale.
	scaled := make([]RequestPair, len(pairs))
	for i, p := range pairs {
		scaled[i] = RequestPair{Start: p.Start, Base: p.Base, Head: 0.95 * p.Head}
	}
	e, err = BootstrapCount(scaled, math.Log(1.0/1.1), 200, 0, rng)
	require.NoError(t, err)
	require.InDelta(t, math.Log(0.95)+math.Log(1/1.1), e.D, 1e-12)
	require.InDelta(t, 0, e.SE, 1e-9)
	// Independent sides: a positive standard error.
	indep := make([]RequestPair, len(pairs))
	for i, p := range pairs {
		indep[i] = RequestPair{Start: p.Start, Base: p.Base, Head: weight(rng.Float64() < 0.7)}
	}
	e, err = BootstrapCount(indep, 0, 200, 0, rng)
	require.NoError(t, err)
	require.Greater(t, e.SE, 0.02)
	require.Less(t, e.SE, 0.2)
	// Bad input.
	zero := make([]RequestPair, 100)
	for i := range zero {
		zero[i].Start, zero[i].Head = float64(i), 1
	}
	_, err = BootstrapCount(zero, 0, 10, 0, rng)
	require.ErrorContains(t, err, "no request of base counted")
	for i := range zero {
		zero[i].Base, zero[i].Head = 1, 0
	}
	_, err = BootstrapCount(zero, 0, 10, 0, rng)
	require.ErrorIs(t, err, errNoHeadCount)
	_, err = BootstrapCount(zero[:10], 0, 10, 0, rng)
	require.ErrorContains(t, err, "10 requests, want at least 50")
	zero[3].Base = -1
	_, err = BootstrapCount(zero, 0, 10, 0, rng)
	require.ErrorContains(t, err, "request 3")
}

func TestPairRunFromResultsGoodput(t *testing.T) {
	mk := func(good []bool, goodput any, duration any) []byte {
		m := map[string]any{"ttfts": []float64{1, 1}, "errors": []string{"", ""}, "start_times": []float64{0, 1}, "duration": duration, "request_goodput": goodput}
		if good != nil {
			m["goodput_met"] = good
		}
		data, err := json.Marshal(m)
		require.NoError(t, err)
		return data
	}
	ok := mk([]bool{true, false}, 0.5, 2.0)
	run, err := PairRunFromResults("p", ok, mk([]bool{true, true}, 1.0, 2.0))
	require.NoError(t, err)
	require.True(t, run.Goodput)
	require.Equal(t, []PairedRequest{{Start: 0, BaseTTFT: 1, HeadTTFT: 1, BaseGood: 1, HeadGood: 1}, {Start: 1, BaseTTFT: 1, HeadTTFT: 1, BaseGood: 0, HeadGood: 1}}, run.Requests)
	for _, tt := range []struct {
		name string
		head []byte
		want string
	}{
		{"no per-request goodput", mk(nil, 0.5, 2.0), "head: reports request_goodput but not goodput_met"},
		{"does not add up", mk([]bool{true, true}, 0.5, 2.0), "goodput_met counts 2 good requests in 2 s (1 req/s), but request_goodput is 0.5"},
		{"short", mk([]bool{true}, 0.5, 2.0), "goodput_met: 1 entries for 2 requests"},
		{"bad duration", mk([]bool{true, false}, 0.5, -1.0), "duration -1: want a positive finite number"},
		{"no duration", mk([]bool{true, false}, 0.5, nil), "reports request_goodput but no duration"},
	} {
		_, err := PairRunFromResults("p", ok, tt.head)
		require.ErrorContains(t, err, tt.want, tt.name)
	}
}

// TestFastJudgeErrors checks the designs and policies it refuses.
func TestFastJudgeErrors(t *testing.T) {
	pol := DefaultPolicy()
	_, err := NewFastJudge(Sequential{}, pol, 0, 0, nil)
	require.Error(t, err)
	_, err = NewFastJudge(DefaultSequential(), pol, 0.5, 0, nil)
	require.ErrorContains(t, err, "steady-state window 0.5")
	noTTFT := &Policy{Rules: []Rule{{Unit: unitFailRatio}}}
	_, err = NewFastJudge(DefaultSequential(), noTTFT, 0, 0, nil)
	require.ErrorContains(t, err, "the policy gates no TTFT or TPOT quantile")
	p90 := &Policy{Rules: []Rule{{Unit: "ttft-p90-sec", Tolerance: Tolerance{Amount: 0.05, Relative: true}}}}
	j, err := NewFastJudge(DefaultSequential(), p90, 0, 0, nil)
	require.NoError(t, err, "a policy may gate another TTFT percentile: the figure keeps its meaning")
	require.Equal(t, 0.90, j.Figures()[0].Q)
	for unit, want := range map[string]float64{"ttft-p99-sec": 0.99, "ttft-p5-sec": 0.05, "ttft-p50-sec": 0.5} {
		q, ok := ttftQuantile(unit)
		require.True(t, ok, unit)
		require.Equal(t, want, q, unit)
	}
	for _, unit := range []string{"ttft-later-p99-sec", "ttft-*-sec", "ttft-p100-sec", "ttft-p0-sec", "ttfc-p99-sec"} {
		_, ok := ttftQuantile(unit)
		require.False(t, ok, unit)
	}
	absGoodput := DefaultPolicy()
	for i, r := range absGoodput.Rules {
		if r.Unit == unitGoodput {
			absGoodput.Rules[i].Tolerance = Tolerance{Amount: 1}
		}
	}
	_, err = NewFastJudge(DefaultSequential(), absGoodput, 0, 0, nil)
	require.ErrorContains(t, err, "goodput-req/s tolerance 1: the paired verdict needs a relative tolerance")
	j, err = NewFastJudge(DefaultSequential(), pol, 0, 0, nil)
	require.NoError(t, err)
	require.InDelta(t, 0.01/5, j.alphaOne, 1e-15, "alpha split between the two medians, p99 TTFT, goodput and fail-ratio")
	for unit, want := range map[string]float64{"tpot-p50-sec": 0.5, "tpot-p90-sec": 0.9} {
		m, q, ok := quantileUnit(unit)
		require.True(t, ok, unit)
		require.Equal(t, "tpot", m, unit)
		require.Equal(t, want, q, unit)
	}
	var units []string
	for _, n := range j.NotJudged {
		units = append(units, n.Unit)
		require.NotEmpty(t, n.Why, n.Unit)
	}
	require.Equal(t, []string{"max-rate-req/s", "ttfc-p99-sec", "broken-tool-call-ratio", "server-spec-accept-ratio", "server-spec-accept-len-tokens", "ttft-later-p99-sec"}, units,
		"every rule of the default policy is judged or listed with why")
}
