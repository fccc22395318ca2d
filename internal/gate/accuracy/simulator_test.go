package accuracy

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/stats"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/gate"
)

// envSequentialSimTrials sets the trials per row of
// TestSequentialSimulator (unset: skipped).
const envSequentialSimTrials = "SERVEGATE_SEQUENTIAL_SIM_TRIALS"

// Scenario of one run of TestSequentialSimulator: seqSimRequests chat
// requests at seqSimRate req/s (Poisson) against the accuracy
// simulator (SimParams): about 5 s a run, enough requests for a p99 a
// bootstrap can work with.
const (
	seqSimRequests = 200
	seqSimRate     = 40.0
)

// TestSequentialSimulator runs the fast paired verdict (gate -sequential's
// statistics) against two in-process simulators driven at the same time
// with one schedule, the way compare.sh --sequential pairs base and head:
// A/A (two servers of the same build) and the slowdown knob at 1.05 and
// 1.10 on head. Per row it prints the verdicts, the pairs used and the
// wall time per verdict, and the first pairs' log ratio and bootstrap
// standard error, which say which synthetic noise model of
// TestSequentialCalibration this machine looks like. It asserts nothing
// about the rates (the machine decides them); it fails only when a run
// fails or a verdict errors.
//
// SERVEGATE_SEQUENTIAL_SIM_TRIALS=<trials per row> runs it.
func TestSequentialSimulator(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envSequentialSimTrials))
	if n < 1 {
		t.Skipf("set %s=<trials per row> to run", envSequentialSimTrials)
	}
	ctx := context.Background()
	sr := newSimRunner(t)
	samples := make([]dataset.Sample, seqSimRequests)
	for i := range samples {
		samples[i] = dataset.Sample{Prompt: strings.Repeat("token ", SimPromptLen-1) + fmt.Sprint(i), PromptLen: SimPromptLen, OutputLen: SimOutputLen}
	}
	run := func(k simServer, seed int64) ([]float64, []float64, error) {
		u, err := sr.url(k)
		if err != nil {
			return nil, nil, err
		}
		res, err := engine.Run(ctx, engine.Config{
			BaseURL: u, Backend: "openai-chat", Model: SimParams(t).Model, IgnoreEOS: true,
			Seed: seed, RequestRate: seqSimRate, RequestTimeout: 30 * time.Second, HTTPClient: sr.hc,
		}, samples)
		if err != nil {
			return nil, nil, err
		}
		ttft, sched := make([]float64, len(res.Records)), make([]float64, len(res.Records))
		for i, r := range res.Records {
			if r.Error != "" {
				return nil, nil, fmt.Errorf("request %d failed: %s", i, r.Error)
			}
			ttft[i], sched[i] = r.TTFT.Seconds(), r.Scheduled.Seconds()
		}
		return ttft, sched, nil
	}
	s := gate.DefaultSequential()
	var seed int64
	pair := func(head simServer) ([]gate.RequestPair, error) {
		seed++
		runtime.GC()
		var wg sync.WaitGroup
		var bt, bs, ht, hs []float64
		var errB, errH error
		wg.Add(2)
		go func() { defer wg.Done(); bt, bs, errB = run(simServer{slowdown: 1}, seed) }()
		go func() { defer wg.Done(); ht, hs, errH = run(head, seed) }()
		wg.Wait()
		if errB != nil || errH != nil {
			return nil, fmt.Errorf("pair: base %v, head %v", errB, errH)
		}
		out := make([]gate.RequestPair, len(bt))
		for i := range bt {
			if math.Abs(bs[i]-hs[i]) > scheduleTolerance {
				return nil, fmt.Errorf("request %d scheduled at %v and %v", i, bs[i], hs[i])
			}
			out[i] = gate.RequestPair{Start: bs[i], Base: bt[i], Head: ht[i]}
		}
		return out, nil
	}
	t.Logf("%d trials per row, %d requests at %v req/s per run, design alpha %v beta %v pairs %d..%d, tolerance +5%%; load %s",
		n, seqSimRequests, seqSimRate, s.Alpha, s.Beta, s.MinPairs, s.MaxPairs, LoadAverage())
	t.Logf("| head | fail | pass | undecided | pairs min / mean / max | wall per verdict min / median / max | first pair D mean, sd / SE mean |")
	t.Logf("| --- | --- | --- | --- | --- | --- | --- |")
	for _, row := range []struct {
		name string
		head simServer
	}{{"A/A", simServer{slowdown: 1, instance: 1}}, {"slowdown 1.05", simServer{slowdown: 1.05}}, {"slowdown 1.10", simServer{slowdown: 1.10}}} {
		var c struct{ Fail, Pass, Undecided, PairsMin, PairsMax, PairsTotal int }
		c.PairsMin = math.MaxInt
		var walls []time.Duration
		var ds, ses []float64
		for range n {
			start := time.Now()
			l, est, err := s.Run(func(int) ([]gate.RequestPair, error) { return pair(row.head) }, 0.99, 0.05, -1, 0, nil)
			require.NoError(t, err)
			walls = append(walls, time.Since(start))
			ds, ses = append(ds, est[0].D), append(ses, est[0].SE)
			switch l.Decision {
			case gate.Regression:
				c.Fail++
			case gate.NoRegression:
				c.Pass++
			default:
				c.Undecided++
			}
			c.PairsMin, c.PairsMax, c.PairsTotal = min(c.PairsMin, l.Pairs), max(c.PairsMax, l.Pairs), c.PairsTotal+l.Pairs
		}
		slices.Sort(walls)
		var mD, mSE float64
		for i := range ds {
			mD += ds[i] / float64(n)
			mSE += ses[i] / float64(n)
		}
		var sd float64
		for _, d := range ds {
			sd += (d - mD) * (d - mD)
		}
		if n > 1 {
			sd = math.Sqrt(sd / float64(n-1))
		}
		t.Logf("| %s | %d/%d | %d/%d | %d/%d | %d / %.2f / %d | %v / %v / %v | %+.2f%%, %.2f%% / %.2f%% |", row.name,
			c.Fail, n, c.Pass, n, c.Undecided, n, c.PairsMin, float64(c.PairsTotal)/float64(n), c.PairsMax,
			walls[0].Round(100*time.Millisecond), walls[len(walls)/2].Round(100*time.Millisecond), walls[len(walls)-1].Round(100*time.Millisecond),
			100*mD, 100*sd, 100*mSE)
	}
	t.Logf("load at the end: %s", LoadAverage())
}

// envSequentialLevers sets the A/A pairs per configuration of
// TestSequentialLevers (unset: skipped).
const envSequentialLevers = "SERVEGATE_SEQUENTIAL_LEVERS"

// TestSequentialLevers measures the levers that cut the paired p99's
// noise at the source, on A/A pairs of the in-process simulator (two
// servers of one build driven at the same time with one schedule): per
// run configuration (requests, rate, warm-up requests) and per way of
// reading the pairs (the whole run or a steady-state window; p99, p90 or
// median TTFT; goodput), the spread over the pairs of the log ratio
// head/base (sd(D): what the sequential test must see through) and the
// mean block-bootstrap standard error of one pair. A lever pays when it
// lowers sd(D) for the figure the scenario gates at the same wall time.
// Target and client on separate cores needs 4 CPUs or more (container
// targets get them, docs/scenarios.md "CPU isolation"); the in-process
// simulator shares the process with the client, so that lever is
// reported as not measurable here.
//
// SERVEGATE_SEQUENTIAL_LEVERS=<pairs per configuration> runs it.
func TestSequentialLevers(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envSequentialLevers))
	if n < 3 {
		t.Skipf("set %s=<A/A pairs per configuration, at least 3> to run", envSequentialLevers)
	}
	if cpus := runtime.NumCPU(); cpus < 4 {
		t.Logf("lever \"target and client on separate cores\": skipped: %d CPUs, it needs 4 or more (and a container target: the in-process simulator shares the client's process)", cpus)
	}
	ctx := context.Background()
	sr := newSimRunner(t)
	type config struct {
		name             string
		requests, warmup int
		rate             float64
	}
	type reading struct {
		name   string
		steady float64
		q      float64 // 0: goodput
	}
	readings := []reading{{"p99", 0, 0.99}, {"p99, steady 10%", 0.1, 0.99}, {"p99, steady 20%", 0.2, 0.99}, {"p90", 0, 0.90}, {"p50", 0, 0.50}, {"goodput", 0, 0}, {"goodput, steady 10%", 0.1, 0}}
	t.Logf("%d A/A pairs per configuration; load %s", n, LoadAverage())
	t.Logf("| run | reading | sd(D) over pairs | mean bootstrap SE | TTFT p50 / p90 / p99 (ms, base) | wall per pair |")
	t.Logf("| --- | --- | --- | --- | --- | --- |")
	configs := []config{
		{"200 req @ 40/s", 200, 0, 40},
		{"200 req @ 40/s, 10 warm-ups", 200, 10, 40},
		{"400 req @ 40/s", 400, 0, 40},
		{"200 req @ 20/s", 200, 0, 20},
		{"400 req @ 80/s", 400, 0, 80},
	}
	type acc struct {
		next    func() (seqPair, error)
		ds, ses [][]float64
		walls   []time.Duration
		base    []float64
	}
	accs := make([]acc, len(configs))
	for ci, c := range configs {
		a := &accs[ci]
		a.next = simPairSource(ctx, t, sr, c.requests, c.rate, c.warmup)
		_, err := a.next() // warm-up pair, not counted
		require.NoError(t, err)
		a.ds, a.ses = make([][]float64, len(readings)), make([][]float64, len(readings))
	}
	// Round robin, one pair of each configuration in turn, so that the
	// machine's drift falls on every configuration alike.
	for range n {
		for ci := range configs {
			a := &accs[ci]
			p, err := a.next()
			require.NoError(t, err)
			a.walls = append(a.walls, p.Wall)
			for _, r := range p.Run.Requests {
				if !r.BaseFailed {
					a.base = append(a.base, r.BaseTTFT)
				}
			}
			for i, rd := range readings {
				unit := "goodput-req/s"
				if rd.q != 0 {
					unit = fmt.Sprintf("ttft-p%d-sec", int(math.Round(100*rd.q)))
				}
				e := onlyEstimate(t, p.Run, unit, rd.steady)
				a.ds[i], a.ses[i] = append(a.ds[i], e.D), append(a.ses[i], e.SE)
			}
		}
	}
	for ci, c := range configs {
		a := &accs[ci]
		slices.Sort(a.walls)
		for i, rd := range readings {
			t.Logf("| %s | %s | %.2f%% | %.2f%% | %.0f / %.0f / %.0f | %v |", c.name, rd.name, 100*stddev(a.ds[i]), 100*stats.Mean(a.ses[i]),
				1000*stats.Quantile(a.base, 0.5), 1000*stats.Quantile(a.base, 0.9), 1000*stats.Quantile(a.base, 0.99), a.walls[len(a.walls)/2].Round(100*time.Millisecond))
		}
	}
	t.Logf("load at the end: %s", LoadAverage())
}

// onlyEstimate judges run as the first pair of a fast verdict that gates
// unit alone at 5%, on the steady-state window steady, and returns that
// figure's estimate: what the verdict reads of one pair.
func onlyEstimate(tb testing.TB, run gate.PairRun, unit string, steady float64) gate.PairEstimate {
	tb.Helper()
	pol := &gate.Policy{Alpha: 0.05, Confidence: 0.95, Rules: []gate.Rule{{Unit: unit, Tolerance: gate.Tolerance{Amount: 0.05, Relative: true}}}}
	j, err := gate.NewFastJudge(gate.DefaultSequential(), pol, steady, 0, nil)
	require.NoError(tb, err, unit)
	_, err = j.Add(run)
	require.NoError(tb, err, unit)
	figs := j.Figures()
	require.Len(tb, figs, 1, unit)
	require.NotEmpty(tb, figs[0].Estimates, unit)
	return figs[0].Estimates[0]
}
