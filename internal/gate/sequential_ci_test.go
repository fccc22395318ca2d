package gate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/stats"
	"github.com/stretchr/testify/require"
)

// A seqCondition is one change the sequential cell injects into head's
// side of the same A/A pairs, in the unit it gates: head's per-request
// TTFT times TTFT (so p99 TTFT moves by that factor), head's goodput
// weights times Goodput (so goodput moves by that factor).
type seqCondition struct {
	Name          string
	TTFT, Goodput float64
	// Want is the decision the condition should get: NoRegression for
	// the A/A, Regression for a change.
	Want Decision
}

// seqConditions are the sequential cell's rows: the A/A, +5% and
// +10% TTFT and -5% goodput.
var seqConditions = []seqCondition{
	{"A/A", 1, 1, NoRegression},
	{"+5% TTFT", 1.05, 1, Regression},
	{"+10% TTFT", 1.10, 1, Regression},
	{"-5% goodput", 1, 0.95, Regression},
}

// inject returns run with c's change applied to head.
func (c seqCondition) inject(run PairRun) PairRun {
	out := run
	out.Requests = make([]PairedRequest, len(run.Requests))
	for i, r := range run.Requests {
		r.HeadTTFT *= c.TTFT
		r.HeadGood *= c.Goodput
		out.Requests[i] = r
	}
	return out
}

// A seqPair is one measured A/A pair and the wall time it took.
type seqPair struct {
	Run  PairRun
	Wall time.Duration
}

// seqOutcome is one condition's verdict in one trial.
type seqOutcome struct {
	Decision Decision
	Unit     string // the figure that decided a regression
	Pairs    int
	Wall     time.Duration // the pairs' wall time plus the statistics'
}

// seqTrial runs the fast verdict (FastJudge under pol, steady-state
// window steady) for every condition on one trial's A/A pairs, drawn from
// next only as long as some condition is undecided: every condition sees
// the same pairs, each stops when its own verdict does.
func seqTrial(tb testing.TB, next func() (seqPair, error), pol *Policy, design Sequential, steady float64, reps int, rng *rand.Rand) []seqOutcome {
	tb.Helper()
	judges := make([]*FastJudge, len(seqConditions))
	out := make([]seqOutcome, len(seqConditions))
	for i := range judges {
		var err error
		judges[i], err = NewFastJudge(design, pol, steady, reps, rng)
		require.NoError(tb, err)
	}
	for k := 1; k <= design.MaxPairs; k++ {
		open := false
		for _, j := range judges {
			open = open || !j.Done()
		}
		if !open {
			break
		}
		p, err := next()
		require.NoError(tb, err, "pair %d", k)
		for i, c := range seqConditions {
			j := judges[i]
			if j.Done() {
				continue
			}
			start := time.Now()
			_, err := j.Add(c.inject(p.Run))
			require.NoError(tb, err, "%s, pair %d", c.Name, k)
			out[i].Wall += p.Wall + time.Since(start)
			out[i].Pairs = j.Pairs
			out[i].Decision, out[i].Unit = j.Decision, j.Unit
		}
	}
	return out
}

// seqTally sums one condition's outcomes over the trials.
type seqTally struct {
	Trials, Fail, Pass, Undecided int
	Units                         map[string]int // failures by deciding figure
	Pairs                         []int
	Walls                         []time.Duration
}

func (s *seqTally) add(o seqOutcome) {
	s.Trials++
	switch o.Decision {
	case Regression:
		s.Fail++
		if s.Units == nil {
			s.Units = map[string]int{}
		}
		s.Units[o.Unit]++
	case NoRegression:
		s.Pass++
	default:
		s.Undecided++
	}
	s.Pairs = append(s.Pairs, o.Pairs)
	s.Walls = append(s.Walls, o.Wall)
}

// row formats the tally as a row of the sequential cell's table.
func (s *seqTally) row(cell, machine, load string, c seqCondition) string {
	ps := slices.Clone(s.Pairs)
	slices.Sort(ps)
	ws := slices.Clone(s.Walls)
	slices.Sort(ws)
	sum := 0
	for _, p := range ps {
		sum += p
	}
	units := ""
	if len(s.Units) > 0 {
		units = fmt.Sprintf(" %v", s.Units)
	}
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	return fmt.Sprintf("| %s | %s | %s | %s | %d/%d%s | %d/%d | %d/%d | %d / %.2f / %d | %v / %v / %v |",
		cell, machine, load, c.Name, s.Fail, s.Trials, units, s.Pass, s.Trials, s.Undecided, s.Trials,
		ps[0], float64(sum)/float64(len(ps)), ps[len(ps)-1], r(ws[0]), r(ws[len(ws)/2]), r(ws[len(ws)-1]))
}

// seqTableHeader is the header of the sequential cell's table.
const seqTableHeader = "| cell | machine | load before → after | head | fail | pass | undecided (exit 2) | pairs min / mean / max | wall per verdict min / median / max |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |"

// syntheticPairSource returns a source of synthetic A/A pairs of m (see
// noiseModel) with a goodput SLO at slo seconds and each request failing
// on each side with probability fail, independently: what the CI cell
// runs in seconds. block, when positive, is not used here: the cell
// measures the statistics as shipped.
func syntheticPairSource(m noiseModel, slo, fail float64, rng *rand.Rand) func() (seqPair, error) {
	return func() (seqPair, error) {
		rs := m.run(rng, 0)
		run := PairRun{Goodput: true, BaseDuration: 40, HeadDuration: 40}
		for _, p := range rs {
			fb, fh := rng.Float64() < fail, rng.Float64() < fail
			run.Requests = append(run.Requests, PairedRequest{
				Start: p.Start, BaseTTFT: p.Base, HeadTTFT: p.Head, BaseFailed: fb, HeadFailed: fh,
				BaseGood: weight(!fb && p.Base <= slo), HeadGood: weight(!fh && p.Head <= slo),
			})
		}
		return seqPair{Run: run}, nil
	}
}

// envSeqCITrials overrides the trials of TestAccuracySequentialCI.
const envSeqCITrials = "SERVEGATE_SEQUENTIAL_CI_TRIALS"

// TestAccuracySequentialCI is the sequential cell's small CI run: the
// same trials (seqTrial: the fast verdict, FastJudge, on A/A pairs with
// the changes injected in the gated units) on synthetic paired runs
// instead of the simulator, so that it takes seconds and runs by
// default. It fails when the statistics break: an A/A false-fail above
// 1% (plus a margin for the trials' own noise) on a time-correlated
// model, or a +10% TTFT or -5% goodput change caught less often than the
// design promises on low noise. Its trials are seeded, so the outcome
// changes only when the code does. A broken bound or a bootstrap that
// ignores the correlation in time fails it: both were tried, and
// docs/logs/2026-12-02-verdicts.md shows the messages.
// SERVEGATE_SEQUENTIAL_CI_TRIALS sets the trials per row (default 200).
func TestAccuracySequentialCI(t *testing.T) {
	n := 200
	if v := os.Getenv(envSeqCITrials); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, envSeqCITrials)
		require.Positive(t, n, envSeqCITrials)
	}
	t.Logf("%d trials per row, synthetic paired runs of 200 requests, goodput SLO at 60 ms (about 70%% of requests meet it), failures 0.5%% a side\n%s", n, seqTableHeader)
	results := map[string][]seqTally{}
	for i, m := range []noiseModel{lowNoise, autocorrNoise} {
		start := time.Now()
		rng := rand.New(rand.NewPCG(uint64(i+1), 77))
		next := syntheticPairSource(m, 0.06, 0.005, rng)
		tallies := make([]seqTally, len(seqConditions))
		for range n {
			for k, o := range seqTrial(t, next, DefaultPolicy(), DefaultSequential(), 0, 200, rng) {
				tallies[k].add(o)
			}
		}
		for k, c := range seqConditions {
			t.Logf("%s", tallies[k].row("CI "+m.Name, "synthetic", "-", c))
		}
		t.Logf("%s: %v", m.Name, time.Since(start).Round(time.Millisecond))
		results[m.Name] = tallies
	}
	// The bootstraps themselves, on noise correlated in time: one pair's
	// standard error against the spread of its estimate over the trials.
	// A bootstrap that ignored the correlation (blocks of one request)
	// would come out far below the spread; the sequential test's spread
	// between pairs would then be its only guard.
	rng := rand.New(rand.NewPCG(9, 77))
	next := syntheticPairSource(burstNoise, 0.06, 0.005, rng)
	var dT, seT, dG, seG []float64
	for range n {
		p, err := next()
		require.NoError(t, err)
		pairs, _ := p.Run.ttftPairs()
		e, err := BootstrapPair(pairs, 0.99, 200, 0, rng)
		require.NoError(t, err)
		dT, seT = append(dT, e.D), append(seT, e.SE)
		e, err = BootstrapCount(p.Run.goodPairs(), p.Run.durationLogRatio(), 200, p.Run.timeBlock(), rng)
		require.NoError(t, err)
		dG, seG = append(dG, e.D), append(seG, e.SE)
	}
	checks := []struct {
		name   string
		d, se  []float64
		lo, hi float64
	}{{"p99 TTFT", dT, seT, 0.54, 1.5}, {"goodput", dG, seG, 0.5, 1.5}}
	ratios := make([]float64, len(checks))
	for i, c := range checks {
		ratios[i] = stats.Mean(c.se) / stddev(c.d)
		t.Logf("burst, %s: mean bootstrap SE / sd of the estimate over %d pairs = %.2f", c.name, n, ratios[i])
	}
	for i, c := range checks {
		require.True(t, ratios[i] >= c.lo && ratios[i] <= c.hi, "%s: the bootstrap's standard error is %.2f of the true spread, want %.2f to %.1f: does it still resample blocks in time?", c.name, ratios[i], c.lo, c.hi)
	}

	maxFalse := int(math.Ceil(0.01*float64(n))) + 3
	for _, name := range []string{"low", "autocorr"} {
		aa := results[name][0]
		require.LessOrEqual(t, aa.Fail, maxFalse, "%s: A/A false fails %d of %d: the verdict is anti-conservative (units %v)", name, aa.Fail, n, aa.Units)
	}
	low := results["low"]
	require.GreaterOrEqual(t, float64(low[2].Fail)/float64(n), 0.95, "+10%% TTFT caught on low noise")
	require.GreaterOrEqual(t, float64(low[3].Fail)/float64(n), 0.95, "-5%% goodput caught on low noise")
	require.GreaterOrEqual(t, float64(low[3].Units["goodput-req/s"])/float64(n), 0.95, "-5%% goodput is caught on goodput, not on another figure")
}

// stddev is the sample standard deviation of x: numpy's std with
// ddof=1.
func stddev(x []float64) float64 {
	n := float64(len(x))
	return stats.Std(x) * math.Sqrt(n/(n-1))
}
