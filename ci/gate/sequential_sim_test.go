package gate

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

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/dataset"
	"github.com/servegate/servegate/benchtest/engine"
)

// envSequentialSimTrials sets the trials per row of
// TestSequentialSimulator (unset: skipped).
const envSequentialSimTrials = "SERVEGATE_SEQUENTIAL_SIM_TRIALS"

// Scenario of one run of TestSequentialSimulator: seqSimRequests chat
// requests at seqSimRate req/s (Poisson) against the accuracy
// simulator (simParams): about 5 s a run, enough requests for a p99 a
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
		samples[i] = dataset.Sample{Prompt: strings.Repeat("token ", simPromptLen-1) + fmt.Sprint(i), PromptLen: simPromptLen, OutputLen: simOutputLen}
	}
	run := func(k simServer, seed int64) ([]float64, []float64, error) {
		srv, err := sr.server(k)
		if err != nil {
			return nil, nil, err
		}
		res, err := engine.Run(ctx, engine.Config{
			BaseURL: srv.URL, Backend: "openai-chat", Model: simParams(t).Model, IgnoreEOS: true,
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
	s := DefaultSequential()
	var seed int64
	pair := func(head simServer) ([]RequestPair, error) {
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
		out := make([]RequestPair, len(bt))
		for i := range bt {
			if math.Abs(bs[i]-hs[i]) > scheduleTolerance {
				return nil, fmt.Errorf("request %d scheduled at %v and %v", i, bs[i], hs[i])
			}
			out[i] = RequestPair{Start: bs[i], Base: bt[i], Head: ht[i]}
		}
		return out, nil
	}
	t.Logf("%d trials per row, %d requests at %v req/s per run, design alpha %v beta %v pairs %d..%d, tolerance +5%%; load %s",
		n, seqSimRequests, seqSimRate, s.Alpha, s.Beta, s.MinPairs, s.MaxPairs, loadAverage())
	t.Logf("| head | fail | pass | undecided | pairs min / mean / max | wall per verdict min / median / max | first pair D mean, sd / SE mean |")
	t.Logf("| --- | --- | --- | --- | --- | --- | --- |")
	for _, row := range []struct {
		name string
		head simServer
	}{{"A/A", simServer{slowdown: 1, instance: 1}}, {"slowdown 1.05", simServer{slowdown: 1.05}}, {"slowdown 1.10", simServer{slowdown: 1.10}}} {
		var c calibration
		c.Trials, c.PairsMin = n, math.MaxInt
		var walls []time.Duration
		var ds, ses []float64
		for range n {
			start := time.Now()
			l, est, err := s.Run(func(int) ([]RequestPair, error) { return pair(row.head) }, 0.99, 0.05, -1, 0, nil)
			require.NoError(t, err)
			walls = append(walls, time.Since(start))
			ds, ses = append(ds, est[0].D), append(ses, est[0].SE)
			switch l.Decision {
			case Regression:
				c.Fail++
			case NoRegression:
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
			c.Fail, n, c.Pass, n, c.Undecided, n, c.PairsMin, c.meanPairs(), c.PairsMax,
			walls[0].Round(100*time.Millisecond), walls[len(walls)/2].Round(100*time.Millisecond), walls[len(walls)-1].Round(100*time.Millisecond),
			100*mD, 100*sd, 100*mSE)
	}
	t.Logf("load at the end: %s", loadAverage())
}
