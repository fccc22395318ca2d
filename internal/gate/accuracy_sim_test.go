package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/sim"
)

// Scenario of one simulator run: a burst of simRequests chat requests of
// simOutputLen tokens against a simulator with 10 ms engine steps, 4
// sequences per step and 5% step jitter. The 99th-percentile TTFT is that
// of the fourth wave, about sixteen steps (~160 ms): long enough that the
// slowdown knob shows through the scheduling noise of a shared machine,
// short enough that a run takes about a fifth of a second.
const (
	simRequests  = 16
	simPromptLen = 64
	simOutputLen = 4
	simTTFTSLO   = 250.0 // goodput SLO on TTFT, ms
)

// simParams are the simulator knobs of the accuracy runs.
func simParams(tb testing.TB) sim.Params {
	tb.Helper()
	p, err := sim.LoadProfile("")
	require.NoError(tb, err)
	p.Model = "servegate/sim-accuracy"
	p.MaxNumSeqs = 4
	p.StepFixedMS = 10
	p.PrefillTokenUS = 5
	p.SeqUS = 100
	p.Jitter = 0.05
	return p
}

// simulatorRun returns a runFunc that drives an in-process simulator with
// servegate's engine and summarises the run with its metrics package, the
// path a scenario benchmark takes. One server per slowdown factor lives
// for the whole test.
func simulatorRun(tb testing.TB) runFunc {
	tb.Helper()
	r := newSimRunner(tb)
	var seed atomic.Int64
	return func(ctx context.Context, slowdown float64) (map[string]float64, error) {
		runtime.GC() // as testing.B does before each run: no collection of the last run's garbage inside this one
		return r.run(ctx, simServer{slowdown: slowdown}, seed.Add(1))
	}
}

// A simServer names one in-process simulator server: its slowdown
// factor and, so that paired runs can drive two servers of the same
// factor (A/A), an instance number.
type simServer struct {
	slowdown float64
	instance int
}

// A simRunner runs the accuracy scenario against in-process simulator
// servers, started on first use and closed at the end of the test. Its
// run is safe for concurrent use: paired runs drive two servers at once.
type simRunner struct {
	tb      testing.TB
	mu      sync.Mutex
	servers map[simServer]*httptest.Server
	samples []dataset.Sample
	hc      *http.Client
}

func newSimRunner(tb testing.TB) *simRunner {
	tb.Helper()
	r := &simRunner{tb: tb, servers: map[simServer]*httptest.Server{}}
	tb.Cleanup(func() {
		for _, s := range r.servers {
			s.Close()
		}
	})
	r.samples = make([]dataset.Sample, simRequests)
	for i := range r.samples {
		r.samples[i] = dataset.Sample{Prompt: strings.Repeat("token ", simPromptLen-1) + fmt.Sprint(i), PromptLen: simPromptLen, OutputLen: simOutputLen}
	}
	// One client for every run, so that runs reuse warm connections
	// instead of paying for connection setup inside the measured TTFT.
	r.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * simRequests, MaxConnsPerHost: 4 * simRequests}}
	tb.Cleanup(r.hc.CloseIdleConnections)
	return r
}

func (r *simRunner) server(k simServer) (*httptest.Server, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.servers[k]; ok {
		return s, nil
	}
	p := simParams(r.tb)
	sim, err := sim.New(sim.Config{Params: &p, Slowdown: k.slowdown})
	if err != nil {
		return nil, err
	}
	r.tb.Cleanup(func() { sim.Close() })
	s := httptest.NewServer(sim)
	r.servers[k] = s
	return s, nil
}

// run performs one run against server k with the given schedule seed
// and returns its metrics by benchstat unit.
func (r *simRunner) run(ctx context.Context, k simServer, seed int64) (map[string]float64, error) {
	srv, err := r.server(k)
	if err != nil {
		return nil, err
	}
	res, err := engine.Run(ctx, engine.Config{
		BaseURL:        srv.URL,
		Backend:        "openai-chat",
		Model:          simParams(r.tb).Model,
		IgnoreEOS:      true,
		Seed:           seed,
		RequestTimeout: 10 * time.Second,
		HTTPClient:     r.hc,
	}, r.samples)
	if err != nil {
		return nil, err
	}
	sum := metrics.Summarize(res.Records, res.Duration, metrics.Options{Goodput: map[string]float64{"ttft": simTTFTSLO}})
	sum.Health = res.Health
	if sum.Completed != simRequests {
		return nil, fmt.Errorf("simulator run: %d of %d requests completed", sum.Completed, simRequests)
	}
	ttft, ok1 := sum.Value("p99_ttft_ms")
	goodput, ok2 := sum.Value("request_goodput")
	if !ok1 || !ok2 || math.IsNaN(ttft) {
		return nil, fmt.Errorf("simulator run: no p99_ttft_ms or request_goodput")
	}
	failRatio, _ := sum.Value("failure_ratio")
	out := map[string]float64{"ttft-p99-sec": ttft / 1000, "goodput-req/s": goodput, "fail-ratio": failRatio}
	for name, unit := range map[string]string{"median_ttft_ms": "ttft-p50-sec", "mean_ttft_ms": "ttft-mean-sec", "mean_e2el_ms": "e2el-mean-sec"} {
		if v, ok := sum.Value(name); ok {
			out[unit] = v / 1000
		}
	}
	// The load generator's health (not gated by the default policy).
	for _, m := range report.HealthMetrics(sum.Value) {
		out[m.Unit] = m.Value
	}
	return out, nil
}

// runPair runs base and head at the same time, with the same schedule
// seed, starting base's run first when baseFirst is set and head's
// otherwise: one pair of ci/compare.sh --paired. Before the pair, one
// runtime.GC, as testing.B does before each run.
func (r *simRunner) runPair(ctx context.Context, base, head simServer, seed int64, baseFirst bool) (b, h map[string]float64, err error) {
	runtime.GC()
	var wg sync.WaitGroup
	var errB, errH error
	first, second := func() { b, errB = r.run(ctx, base, seed) }, func() { h, errH = r.run(ctx, head, seed) }
	if !baseFirst {
		first, second = second, first
	}
	wg.Add(2)
	go func() { defer wg.Done(); first() }()
	go func() { defer wg.Done(); second() }()
	wg.Wait()
	return b, h, errors.Join(errB, errH)
}

// TestAccuracySimulator measures the gate against the in-process
// simulator: 40 trials, each of base, unchanged head and head with the
// simulator's slowdown knob at 1.10, interleaved, 10 runs per side; the
// gate (default policy) compares base with each head using the first 5 and
// all 10 runs. The figures depend on this machine's noise; they are
// reported (-v), and asserted against the targets only with
// SERVEGATE_ACCURACY_STRICT=1. An experiment of about four minutes whose
// outcome rides on this machine's noise, so it runs only when asked:
// SERVEGATE_ACCURACY_TRIALS set to any number.
func TestAccuracySimulator(t *testing.T) {
	if os.Getenv(envAccuracyTrials) == "" {
		t.Skip("about 1200 simulator runs: set " + envAccuracyTrials + " to run it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := simulatorRun(t)
	// Warm up both servers and the HTTP connections.
	for _, s := range []float64{1, 1.10} {
		_, err := run(ctx, s)
		require.NoError(t, err)
	}
	start := time.Now()
	const n = 40
	trials := collectTrials(ctx, t, run, n, 10, 1.10)
	t.Logf("in-process simulator (engine + metrics, %d requests per run, slowdown knob 1.10), %d trials, %d runs, %v:",
		simRequests, n, n*10*3, time.Since(start).Round(time.Second))
	res := gateAccuracy(ctx, t, trials, []int{5, 10}, DefaultPolicy(), "ttft-p99-sec")
	t.Logf(" default policy (ttft-p99-sec 5%%, goodput-req/s 5%%):")
	for _, r := range res {
		t.Logf("  %s", r)
	}
	// The same runs under policies that gate a central TTFT statistic:
	// the tail of 16 requests is the noisiest number a run has.
	for _, unit := range []string{"ttft-p50-sec", "ttft-mean-sec"} {
		pol := DefaultPolicy()
		pol.Rules[0].Unit = unit
		t.Logf(" policy %s 5%%, goodput-req/s 5%%:", unit)
		for _, r := range gateAccuracy(ctx, t, trials, []int{5, 10}, pol, unit) {
			t.Logf("  %s", r)
		}
	}
	for _, r := range res {
		require.Zero(t, r.aaError+r.detectErr, "a comparison errored at count %d", r.count)
	}
	// Sanity that holds on any machine where the knob works at all.
	require.Greater(t, res[1].detect, res[1].aaFail, "the slowdown must be detected more often than noise fails the gate")
	if os.Getenv("SERVEGATE_ACCURACY_STRICT") != "" {
		for _, r := range res {
			require.LessOrEqual(t, float64(r.aaFail)/n, 0.05, "A/A false-fail target at count %d", r.count)
		}
		require.GreaterOrEqual(t, float64(res[1].detect)/n, 0.90, "detection target at count 10")
	}
}
