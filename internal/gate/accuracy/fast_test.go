package accuracy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/stats"

	"github.com/servegate/servegate/internal/gate"
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
	Want gate.Decision
	// TPOT multiplies head's per-request TPOT (0: unchanged).
	TPOT float64
}

// seqConditions are the sequential cell's rows: the A/A, +5% and
// +10% TTFT and -5% goodput.
var seqConditions = []seqCondition{
	{"A/A", 1, 1, gate.NoRegression, 0},
	{"+5% TTFT", 1.05, 1, gate.Regression, 0},
	{"+10% TTFT", 1.10, 1, gate.Regression, 0},
	{"-5% goodput", 1, 0.95, gate.Regression, 0},
}

// inject returns run with c's change applied to head.
func (c seqCondition) inject(run gate.PairRun) gate.PairRun {
	out := run
	out.Requests = make([]gate.PairedRequest, len(run.Requests))
	for i, r := range run.Requests {
		r.HeadTTFT *= c.TTFT
		r.HeadGood *= c.Goodput
		if c.TPOT > 0 {
			r.HeadTPOT *= c.TPOT
		}
		out.Requests[i] = r
	}
	return out
}

// A seqPair is one measured A/A pair and the wall time it took.
type seqPair struct {
	Run  gate.PairRun
	Wall time.Duration
}

// seqOutcome is one condition's verdict in one trial.
type seqOutcome struct {
	Decision gate.Decision
	Unit     string // the figure that decided a regression
	Pairs    int
	Wall     time.Duration // the pairs' wall time plus the statistics'
}

// seqTrial runs the fast verdict (FastJudge under pol, steady-state
// window steady) for every condition on one trial's A/A pairs, drawn from
// next only as long as some condition is undecided: every condition sees
// the same pairs, each stops when its own verdict does.
func seqTrial(tb testing.TB, next func() (seqPair, error), pol *gate.Policy, design gate.Sequential, steady float64, reps int, rng *rand.Rand) []seqOutcome {
	tb.Helper()
	judges := make([]*gate.FastJudge, len(seqConditions))
	out := make([]seqOutcome, len(seqConditions))
	for i := range judges {
		var err error
		judges[i], err = gate.NewFastJudge(design, pol, steady, reps, rng)
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
	case gate.Regression:
		s.Fail++
		if s.Units == nil {
			s.Units = map[string]int{}
		}
		s.Units[o.Unit]++
	case gate.NoRegression:
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

// Scenario of the sequential cell's runs on the in-process simulator:
// seqCellRequests chat requests at seqCellRate req/s (Poisson) against
// the accuracy simulator (SimParams; about 80% of its capacity: TTFT
// p50 ~30 ms, p99 ~110 ms), with a goodput SLO on TTFT of seqSimSLO ms,
// below the simulator's p90 TTFT at this load (about one request in
// seven misses it, so goodput carries noise of its own). The size is
// the lever measured by TestSequentialLevers: of the runs tried, 400
// requests at 80 req/s gave the smallest spread of the paired p99 per
// second of wall time (docs/logs/2026-12-02-verdicts.md).
const (
	seqCellRequests = 400
	seqCellRate     = 80.0
	seqSimSLO       = 60.0
)

// simPairSource returns a source of A/A pairs: base and head are two
// in-process simulators of one build driven at the same time with one
// schedule (the way compare.sh pairs them), requests at rate req/s,
// warmups warm-up requests per run, each pair a new schedule seed.
func simPairSource(ctx context.Context, tb testing.TB, sr *simRunner, requests int, rate float64, warmups int) func() (seqPair, error) {
	return headPairSource(ctx, tb, sr, simServer{slowdown: 1, instance: 1}, requests, rate, warmups)
}

// headPairSource is simPairSource with head's server head: an A/A
// pair when head is a second instance of base's build, a change when
// its knobs differ.
func headPairSource(ctx context.Context, tb testing.TB, sr *simRunner, head simServer, requests int, rate float64, warmups int) func() (seqPair, error) {
	tb.Helper()
	samples := make([]dataset.Sample, requests)
	for i := range samples {
		samples[i] = dataset.Sample{Prompt: strings.Repeat("token ", SimPromptLen-1) + fmt.Sprint(i), PromptLen: SimPromptLen, OutputLen: SimOutputLen}
	}
	type side struct {
		res *engine.Result
		err error
	}
	run := func(k simServer, seed int64) side {
		u, err := sr.url(k)
		if err != nil {
			return side{err: err}
		}
		res, err := engine.Run(ctx, engine.Config{
			BaseURL: u, Backend: "openai-chat", Model: SimParams(tb).Model, IgnoreEOS: true, NumWarmups: warmups,
			Seed: seed, RequestRate: rate, RequestTimeout: 30 * time.Second, HTTPClient: sr.hc,
		}, samples)
		return side{res, err}
	}
	var seed int64
	return func() (seqPair, error) {
		seed++
		runtime.GC()
		start := time.Now()
		var b, h side
		var wg sync.WaitGroup
		wg.Add(2)
		first, second := func() { b = run(simServer{slowdown: 1}, seed) }, func() { h = run(head, seed) }
		if seed%2 == 0 {
			first, second = second, first
		}
		go func() { defer wg.Done(); first() }()
		go func() { defer wg.Done(); second() }()
		wg.Wait()
		wall := time.Since(start)
		if b.err != nil || h.err != nil {
			return seqPair{}, fmt.Errorf("pair: base %v, head %v", b.err, h.err)
		}
		pr := gate.PairRun{Goodput: true, TPOT: true, BaseDuration: b.res.Duration.Seconds(), HeadDuration: h.res.Duration.Seconds()}
		for i := range b.res.Records {
			rb, rh := &b.res.Records[i], &h.res.Records[i]
			if math.Abs(rb.Scheduled.Seconds()-rh.Scheduled.Seconds()) > scheduleTolerance {
				return seqPair{}, fmt.Errorf("request %d scheduled at %v and %v", i, rb.Scheduled, rh.Scheduled)
			}
			pr.Requests = append(pr.Requests, gate.PairedRequest{
				Start: rb.Scheduled.Seconds(), BaseTTFT: rb.TTFT.Seconds(), HeadTTFT: rh.TTFT.Seconds(),
				BaseFailed: !rb.Success, HeadFailed: !rh.Success,
				BaseGood: weight(rb.Success && rb.TTFT.Seconds()*1000 <= seqSimSLO), HeadGood: weight(rh.Success && rh.TTFT.Seconds()*1000 <= seqSimSLO),
				BaseTPOT: tpot(rb), HeadTPOT: tpot(rh),
			})
		}
		return seqPair{Run: pr, Wall: wall}, nil
	}
}

// sequentialCell runs n trials of the sequential cell on the in-process
// simulator and returns its table rows.
func sequentialCell(ctx context.Context, t *testing.T, sr *simRunner, n int, cell, machine string) []string {
	t.Helper()
	next := simPairSource(ctx, t, sr, seqCellRequests, seqCellRate, 0)
	_, err := next() // warm both servers and the connections
	require.NoError(t, err)
	load0 := LoadAverage()
	tallies := make([]seqTally, len(seqConditions))
	rng := rand.New(rand.NewPCG(27, 5))
	for k := range n {
		for i, o := range seqTrial(t, next, gate.DefaultPolicy(), gate.DefaultSequential(), 0, 0, rng) {
			tallies[i].add(o)
		}
		// A long cell logs its tally as it goes, so that a run cut short
		// (a timeout, ^C) still shows what it measured.
		if (k+1)%10 == 0 && k+1 < n {
			load := load0 + " → " + LoadAverage()
			for i, c := range seqConditions {
				t.Logf("after %d trials: %s", k+1, tallies[i].row(cell, machine, load, c))
			}
		}
	}
	load := load0 + " → " + LoadAverage()
	var rows []string
	for i, c := range seqConditions {
		rows = append(rows, tallies[i].row(cell, machine, load, c))
	}
	return rows
}

// scheduleTolerance is how far, in seconds, request i's scheduled
// offsets may differ between the two sides of a pair, as the gate's
// reader of result files allows: one plan gives both.
const scheduleTolerance = 1e-3

// tpot is a request's time per output token after the first, in
// seconds, as vLLM's benchmark computes it: (latency - TTFT) / (output
// tokens - 1); 0 when it has fewer than two output tokens.
func tpot(r *metrics.Record) float64 {
	if !r.Success || r.OutputTokens < 2 {
		return 0
	}
	return (r.Latency - r.TTFT).Seconds() / float64(r.OutputTokens-1)
}

// weight is 1 for true and 0 for false: a request's weight in goodput.
func weight(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// stddev is the sample standard deviation of x: numpy's std with
// ddof=1.
func stddev(x []float64) float64 {
	n := float64(len(x))
	return stats.Std(x) * math.Sqrt(n/(n-1))
}
