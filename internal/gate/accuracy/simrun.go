package accuracy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/sim"
	"github.com/stretchr/testify/require"
)

// A RunFunc performs one benchmark run of a server slowed down by the
// given factor (1 = unchanged) and returns its metrics by benchstat unit.
type RunFunc func(ctx context.Context, slowdown float64) (map[string]float64, error)

// Scenario of one simulator run: a burst of SimRequests chat requests of
// SimOutputLen tokens against a simulator with 10 ms engine steps, 4
// sequences per step and 5% step jitter. The 99th-percentile TTFT is that
// of the fourth wave, about sixteen steps (~160 ms): long enough that the
// slowdown knob shows through the scheduling noise of a shared machine,
// short enough that a run takes about a fifth of a second.
const (
	SimRequests  = 16
	SimPromptLen = 64
	SimOutputLen = 4
	SimTTFTSLO   = 250.0 // goodput SLO on TTFT, ms
)

// SimParams are the simulator knobs of the accuracy runs.
func SimParams(tb testing.TB) sim.Params {
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

// SimulatorRun returns a RunFunc that drives an in-process simulator with
// servegate's engine and summarises the run with its metrics package, the
// path a scenario benchmark takes. One server per slowdown factor lives
// for the whole test.
func SimulatorRun(tb testing.TB) RunFunc {
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
	// decode is the profile's decode_slowdown (0: the default, 1).
	decode float64
	// stallRate is the share of requests whose first token is held back
	// stallMS milliseconds (the fault_stall knobs, stalled before the
	// first chunk): a change of the tail alone.
	stallRate, stallMS float64
}

// A simRunner runs the accuracy scenario against in-process simulator
// servers, started on first use and closed at the end of the test. Its
// run is safe for concurrent use: paired runs drive two servers at once.
type simRunner struct {
	tb   testing.TB
	mu   sync.Mutex
	urls map[simServer]string
	// start, when set, starts server k with knobs p somewhere else than
	// in this process (a simulator container) and returns its address.
	start   func(k simServer, p sim.Params) (string, error)
	samples []dataset.Sample
	hc      *http.Client
}

func newSimRunner(tb testing.TB) *simRunner {
	tb.Helper()
	r := &simRunner{tb: tb, urls: map[simServer]string{}}
	r.samples = make([]dataset.Sample, SimRequests)
	for i := range r.samples {
		r.samples[i] = dataset.Sample{Prompt: strings.Repeat("token ", SimPromptLen-1) + fmt.Sprint(i), PromptLen: SimPromptLen, OutputLen: SimOutputLen}
	}
	// One client for every run, so that runs reuse warm connections
	// instead of paying for connection setup inside the measured TTFT.
	r.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * SimRequests, MaxConnsPerHost: 4 * SimRequests}}
	tb.Cleanup(r.hc.CloseIdleConnections)
	return r
}

// url returns server k's address, starting it on first use: in this
// process, or with r.start.
func (r *simRunner) url(k simServer) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u, ok := r.urls[k]; ok {
		return u, nil
	}
	p := SimParams(r.tb)
	if k.decode > 0 {
		p.DecodeSlowdown = k.decode
	}
	p.FaultStallRate, p.FaultStallMS, p.FaultStallAfter = k.stallRate, k.stallMS, 0
	if r.start != nil {
		u, err := r.start(k, p)
		if err != nil {
			return "", err
		}
		r.urls[k] = u
		return u, nil
	}
	sim, err := sim.New(sim.Config{Params: &p, Slowdown: k.slowdown})
	if err != nil {
		return "", err
	}
	s := httptest.NewServer(sim)
	r.tb.Cleanup(func() {
		s.Close()
		sim.Close()
	})
	r.urls[k] = s.URL
	return s.URL, nil
}

// run performs one run against server k with the given schedule seed
// and returns its metrics by benchstat unit.
func (r *simRunner) run(ctx context.Context, k simServer, seed int64) (map[string]float64, error) {
	u, err := r.url(k)
	if err != nil {
		return nil, err
	}
	res, err := engine.Run(ctx, engine.Config{
		BaseURL:        u,
		Backend:        "openai-chat",
		Model:          SimParams(r.tb).Model,
		IgnoreEOS:      true,
		Seed:           seed,
		RequestTimeout: 10 * time.Second,
		HTTPClient:     r.hc,
	}, r.samples)
	if err != nil {
		return nil, err
	}
	sum := metrics.Summarize(res.Records, res.Duration, metrics.Options{Goodput: map[string]float64{"ttft": SimTTFTSLO}})
	sum.Health = res.Health
	if sum.Completed != SimRequests {
		return nil, fmt.Errorf("simulator run: %d of %d requests completed", sum.Completed, SimRequests)
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

// WriteRuns writes runs as a servegate benchfmt file and returns its path;
// paired labels run i "pair: i+1", as ci/compare.sh --paired does.
func WriteRuns(tb testing.TB, dir, name string, runs []map[string]float64, paired bool) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("target: accuracy\nUnit ttft-p99-sec better=lower\nUnit goodput-req/s better=higher\n")
	for i, m := range runs {
		if paired {
			fmt.Fprintf(&b, "pair: %d\n", i+1)
		}
		units := make([]string, 0, len(m))
		for u := range m {
			units = append(units, u)
		}
		sort.Strings(units)
		b.WriteString("BenchmarkScenarios/scenario=accuracy 1")
		for _, u := range units {
			fmt.Fprintf(&b, " %v %s", m[u], u)
		}
		b.WriteString("\n")
	}
	file := filepath.Join(dir, name+".txt")
	require.NoError(tb, os.WriteFile(file, []byte(b.String()), 0o644))
	return file
}

// LoadAverage is the one-minute load average, "?" when unknown.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
