package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/stats"
	"github.com/servegate/servegate/internal/store"
)

// storeLowNoise is the low noise model of runs that do not run at the
// same time (stored, fresh and head runs of the stored baseline): no
// machine noise is shared between them, so only a quiet machine's (sd
// 0.02) is left in each, beside low's private terms. How close the
// in-process simulator comes to it is TestStoreBaselineSimulator's
// question.
var storeLowNoise = noiseModel{Name: "store-low", Requests: 200, Prompt: 0.35, Machine: 0.02, Rho: 0.95, Side: 0.015, SideRho: 0.8, Jitter: 0.015, Run: 0.005}

// storeQuietNoise is a third of storeLowNoise's private noise: runs
// quiet enough that two fresh base runs tell a drift of half the
// tolerance from none, for the tests of what the gate does with each
// input (not of its rates).
var storeQuietNoise = noiseModel{Name: "store-quiet", Requests: 200, Prompt: 0.35, Machine: 0.005, Rho: 0.95, Side: 0.005, SideRho: 0.8, Jitter: 0.005, Run: 0.002}

// A storeTrial generates the runs of one history-baseline comparison of
// a noise model: one dataset and one seeded schedule for every run (the
// per-request term of the prompts and the arrival times are the same in
// each), each run with its own machine noise, side noise, jitter and
// offset, since stored, fresh and head runs do not run at the same time.
type storeTrial struct {
	m       noiseModel
	rng     *rand.Rand
	prompts []float64
	sched   []float64
}

func newStoreTrial(m noiseModel, seed uint64) *storeTrial {
	tr := &storeTrial{m: m, rng: rand.New(rand.NewPCG(seed, 0x57a))}
	sched := rand.New(rand.NewPCG(7, 7)) // one schedule: the scenario's seed
	t := 0.0
	for range m.Requests {
		t += sched.ExpFloat64() / 5 // 5 requests/s
		tr.sched = append(tr.sched, t)
		tr.prompts = append(tr.prompts, m.Prompt*tr.rng.NormFloat64())
	}
	return tr
}

// run generates one run's TTFTs, slower by the factor 1+change.
func (tr *storeTrial) run(change float64) []float64 {
	m, rng := tr.m, tr.rng
	ar := func(prev, sd, rho float64) float64 {
		return rho*prev + sd*math.Sqrt(1-rho*rho)*rng.NormFloat64()
	}
	machine, side, off := m.Machine*rng.NormFloat64(), m.Side*rng.NormFloat64(), m.Run*rng.NormFloat64()
	out := make([]float64, m.Requests)
	for i := range out {
		machine, side = ar(machine, m.Machine, m.Rho), ar(side, m.Side, m.SideRho)
		out[i] = math.Exp(math.Log(0.05) + tr.prompts[i] + machine + side + off + m.Jitter*rng.NormFloat64() + math.Log1p(change))
	}
	return out
}

// pairsOf matches a stored run with a run of today, request by request.
func (tr *storeTrial) pairsOf(stored, today []float64) []RequestPair {
	out := make([]RequestPair, len(stored))
	for i := range out {
		out[i] = RequestPair{Start: tr.sched[i], Base: stored[i], Head: today[i]}
	}
	return out
}

// storeResult is a detailed result file of one run of scenario at
// version sha, as servegate writes it (its identity keys, the
// per-request arrays), with extra keys set.
func storeResult(t testing.TB, scenario, sha string, ttfts, sched []float64, extra map[string]any) []byte {
	t.Helper()
	errs := make([]string, len(ttfts))
	m := map[string]any{"scenario": scenario, "scenario-sha": sha, "invalid": nil, "ttfts": ttfts, "errors": errs,
		"scheduled_times": sched, "start_times": sched, "duration": sched[len(sched)-1]}
	for k, v := range extra {
		m[k] = v
	}
	data, err := json.Marshal(m)
	require.NoError(t, err)
	return data
}

// A storedAdd is one add of main's runs to a test store.
type storedAdd struct {
	runner, commit string
	added          time.Time
	sha            string
	runs           [][]float64 // TTFTs of each run, a result file and a result line each
	refusedLines   int         // result lines marked invalid after them
	jsonExtra      map[string]any
	noJSON         bool // file the benchfmt lines only
}

// addStored files a in st the way servegate history add files main's
// run: bench.benchfmt and one <scenario>.bench.<n>.json per run.
func addStored(t testing.TB, st *store.Store, a storedAdd, sched []float64) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "target: inproc\nscenario-sha: %s\n", a.sha)
	files := []string{filepath.Join(dir, "bench.benchfmt")}
	for i, ttfts := range a.runs {
		fmt.Fprintf(&b, "BenchmarkScenarios/scenario=chat-2 1 %v ttft-p99-sec 0 fail-ratio\n", stats.Quantile(append([]float64(nil), ttfts...), 0.99))
		if a.noJSON {
			continue
		}
		f := filepath.Join(dir, fmt.Sprintf("chat.bench.%d.json", i+1))
		require.NoError(t, os.WriteFile(f, storeResult(t, "chat", a.sha, ttfts, sched, a.jsonExtra), 0o644))
		files = append(files, f)
	}
	if a.refusedLines > 0 {
		b.WriteString("invalid: true\n")
		for range a.refusedLines {
			b.WriteString("BenchmarkScenarios/scenario=chat-2 1 0.09 ttft-p99-sec 0.5 fail-ratio\n")
		}
	}
	require.NoError(t, os.WriteFile(files[0], []byte(b.String()), 0o644))
	_, err := st.Add(context.Background(), store.AddRequest{Commit: a.commit, CommitTime: a.added.Add(-time.Hour), Runner: a.runner, Files: files, Now: a.added})
	require.NoError(t, err)
}

// TestStoreBaselineFailsClosed: gate -sequential -baseline-store on a
// store filed through store.Store.Add: a clean head passes, a slower
// one fails, and every baseline the gate cannot judge against is exit 2
// with its reason.
func TestStoreBaselineFailsClosed(t *testing.T) {
	now := time.Now().UTC()
	tr := newStoreTrial(storeQuietNoise, 1)
	runs := func(n int, change float64) [][]float64 {
		var out [][]float64
		for range n {
			out = append(out, tr.run(change))
		}
		return out
	}
	main8 := runs(8, 0)
	write := func(t *testing.T, name string, sha string, ttfts []float64, extra map[string]any) string {
		f := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(f, storeResult(t, "chat", sha, ttfts, tr.sched, extra), 0o644))
		return f
	}
	// today writes fresh base and head runs: fresh, heads (head slower by
	// change, both by drift), as -fresh-base flags and positional files.
	today := func(t *testing.T, fresh, heads int, drift, change float64) []string {
		var args []string
		for i := range fresh {
			args = append(args, "-fresh-base", write(t, fmt.Sprintf("base-%d.json", i+1), "v1", tr.run(drift), nil))
		}
		for i := range heads {
			args = append(args, write(t, fmt.Sprintf("head-%d.json", i+1), "v1", tr.run(drift+change), nil))
		}
		return args
	}
	good := storedAdd{runner: "cpu2", commit: "c1", added: now.Add(-48 * time.Hour), sha: "v1", runs: main8}
	with := func(f func(a *storedAdd)) []storedAdd {
		a := good
		f(&a)
		return []storedAdd{a}
	}
	otherSched := append([]float64(nil), tr.sched...)
	otherSched[3] += 0.5
	tests := []struct {
		name  string
		store []storedAdd
		sched []float64 // of the stored runs; nil: the scenario's
		flags []string
		args  func(t *testing.T) []string
		code  int
		want  string // in stdout (pass, fail) or stderr (exit 2)
	}{
		{"clean head passes", []storedAdd{good}, nil, nil, func(t *testing.T) []string { return today(t, 2, 8, 0, 0) }, ExitPass, "PASS ttft-p50-sec: "},
		{"slower head fails", []storedAdd{good}, nil, nil, func(t *testing.T) []string { return today(t, 2, 8, 0, 0.25) }, ExitRegression, "FAIL ttft-p50-sec: "},
		{"baseline of the pull request's base", []storedAdd{good}, nil, []string{"-base-commit", "c1"}, func(t *testing.T) []string { return today(t, 2, 8, 0, 0.25) }, ExitRegression, "FAIL ttft-p50-sec: "},
		{"missing: no run of the scenario", with(func(a *storedAdd) {}), nil, nil, func(t *testing.T) []string {
			f := filepath.Join(t.TempDir(), "h.json")
			require.NoError(t, os.WriteFile(f, storeResult(t, "other", "v1", tr.run(0), tr.sched, nil), 0o644))
			return []string{"-fresh-base", f, f}
		}, ExitBadInput, "baseline: missing: scenario other has no baseline on runner type cpu2"},
		{"missing: base commit not stored", []storedAdd{good}, nil, []string{"-base-commit", "c2"}, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"baseline: missing: main's commit c2 (the pull request's base) has no runs in the store"},
		{"stale", with(func(a *storedAdd) { a.added = now.Add(-31 * 24 * time.Hour) }), nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"stale: main's runs (commit c1) were added"},
		{"stale at a shorter limit", []storedAdd{good}, nil, []string{"-baseline-max-age", "1"}, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"past the limit of 1 days (-baseline-max-age)"},
		{"another scenario version", with(func(a *storedAdd) { a.sha = "v0" }), nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"ran another version of the scenario (scenario-sha v0, head's v1)"},
		{"another runner type", with(func(a *storedAdd) { a.runner = "cpu4" }), nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"has no runs of runner type cpu2 (it has: cpu4)"},
		{"invalid result lines", with(func(a *storedAdd) { a.refusedLines = 1 }), nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"1 invalid or interrupted result line(s) beside 8 valid"},
		{"interrupted stored run", with(func(a *storedAdd) { a.jsonExtra = map[string]any{"interrupted": true} }), nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"a stored run of the baseline (commit c1): interrupted run"},
		{"invalid stored run", with(func(a *storedAdd) { a.jsonExtra = map[string]any{"invalid": "load generator saturated"} }), nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"invalid run: load generator fell behind: load generator saturated"},
		{"fewer runs than the test needs", with(func(a *storedAdd) { a.runs = main8[:2] }), nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"has 2 valid run(s), the test needs 3"},
		{"fewer runs than the head runs", with(func(a *storedAdd) { a.runs = main8[:4] }), nil, nil, func(t *testing.T) []string { return today(t, 2, 5, 0, 0) }, ExitBadInput,
			"has 4 valid run(s), the test needs 5"},
		{"no detailed result files", with(func(a *storedAdd) { a.noJSON = true }), nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"has 0 detailed result file(s) of the scenario, the test needs 3"},
		{"another schedule", []storedAdd{good}, otherSched, nil, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"not a pair: request 3 is scheduled at"},
		{"drift", []storedAdd{good}, nil, nil, func(t *testing.T) []string { return today(t, 2, 3, 0.10, 0) }, ExitBadInput,
			"drift: today's base differs from the stored baseline by +"},
		{"faster machine hides a regression", []storedAdd{good}, nil, nil, func(t *testing.T) []string { return today(t, 2, 3, -0.10, 0.10) }, ExitBadInput,
			"drift: today's base differs from the stored baseline by -"},
		{"no fresh base run", []storedAdd{good}, nil, nil, func(t *testing.T) []string { return today(t, 0, 3, 0, 0) }, ExitBadInput,
			"no -fresh-base run: the drift of the machine"},
		{"not decided yet", []storedAdd{good}, nil, nil, func(t *testing.T) []string { return today(t, 2, 2, 0, 0) }, ExitBadInput,
			"not decided yet: 2 of at least 3 pairs; run another head run (at most 8 in all)"},
		{"head of another scenario version", []storedAdd{good}, nil, []string{"-scenario-version", "v2"}, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"ran scenario-sha v1, not the -scenario-version v2 given"},
		{"interrupted head run", []storedAdd{good}, nil, nil, func(t *testing.T) []string {
			return append(today(t, 1, 0, 0, 0), write(t, "h.json", "v1", tr.run(0), map[string]any{"interrupted": true}))
		}, ExitBadInput, "interrupted run: cut short before it sent its whole load: its figures are not used"},
		{"no runner", []storedAdd{good}, nil, []string{"-runner="}, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput, "-runner is required"},
		{"max age past its limit", []storedAdd{good}, nil, []string{"-baseline-max-age", "366"}, func(t *testing.T) []string { return today(t, 2, 3, 0, 0) }, ExitBadInput,
			"-baseline-max-age 366: want 1 to 365 days"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			st, err := store.Create(dir)
			require.NoError(t, err)
			sched := tr.sched
			if tt.sched != nil {
				sched = tt.sched
			}
			for _, a := range tt.store {
				addStored(t, st, a, sched)
			}
			args := append([]string{"-sequential", "-baseline-store", dir, "-runner", "cpu2"}, tt.flags...)
			code, out, errOut := runHistoryMain(t, append(args, tt.args(t)...)...)
			t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Equal(t, tt.code, code)
			require.Contains(t, out+errOut, tt.want)
			if code != ExitBadInput {
				require.Contains(t, out, "baseline: Scenarios/scenario=chat-2 of main's commit c1 on runner type cpu2")
				require.Contains(t, out, "no drift: today's base is within ±2.47% of the stored baseline")
				require.Contains(t, out, "2 fresh base run(s) for the drift check")
			}
		})
	}
}

// TestStoreFlagsNeedTheStore: the stored baseline's flags are refused
// without -baseline-store, and -baseline-store without -sequential.
func TestStoreFlagsNeedTheStore(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-sequential", "-fresh-base", "a.json", "b.json", "c.json"}, "-fresh-base: only with -sequential -baseline-store"},
		{[]string{"-sequential", "-base-commit", "c1", "a.json", "b.json"}, "-base-commit: only with -sequential -baseline-store"},
		{[]string{"-baseline-store", "s", "-runner", "r", "a.json", "b.json"}, "-baseline-store: only with -sequential"},
		{[]string{"-sequential", "-runner", "r", "a.json", "b.json"}, "-runner r: only with -history on a results store, or -baseline-store"},
		{[]string{"-sequential", "-baseline-store", t.TempDir(), "-runner", "r", "-fresh-base", "a.json", "b.json"}, "is not a servegate history store"},
	} {
		code, out, errOut := runHistoryMain(t, tt.args...)
		require.Equal(t, ExitBadInput, code, "%v: %s%s", tt.args, out, errOut)
		require.Contains(t, errOut, tt.want, "%v", tt.args)
	}
}

// TestCheckDrift: the drift rule's three outcomes, at a 5% tolerance
// (the limit is half of it as a log ratio, ±2.47%).
func TestCheckDrift(t *testing.T) {
	for _, tt := range []struct {
		name     string
		est      []PairEstimate
		detected bool
		want     string
	}{
		{"none", []PairEstimate{{D: 0.01, SE: 0.02}, {D: -0.005, SE: 0.02}}, false, "no drift: today's base is within ±2.47% of the stored baseline in median TTFT, +0.25% (±1.4%) over 2 fresh base run(s), not significant"},
		{"past the limit", []PairEstimate{{D: 0.03, SE: 0.05}, {D: 0.03, SE: 0.05}}, true, "past the drift limit of ±2.47%"},
		{"past the limit, faster", []PairEstimate{{D: -0.03, SE: 0.05}}, true, "by -2.96% (±5.0%) over 1 fresh base run(s) in median TTFT, past the drift limit"},
		{"significant", []PairEstimate{{D: 0.02, SE: 0.005}, {D: 0.02, SE: 0.005}}, true, "significantly (more than 1.96 standard errors)"},
		{"spread from 3 runs", []PairEstimate{{D: 0.02, SE: 0.001}, {D: 0.021, SE: 0.001}, {D: 0.019, SE: 0.001}}, true, "significantly"},
		{"spread hides it", []PairEstimate{{D: 0.05, SE: 0.001}, {D: -0.04, SE: 0.001}, {D: 0.02, SE: 0.001}}, false, "no drift"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := CheckDrift(tt.est, 0.05)
			require.NoError(t, err)
			require.Equal(t, tt.detected, d.Detected, d.Why)
			require.Contains(t, d.Why, tt.want)
		})
	}
	_, err := CheckDrift(nil, 0.05)
	require.ErrorContains(t, err, "no fresh base run")
	_, err = CheckDrift([]PairEstimate{{D: math.NaN()}}, 0.05)
	require.ErrorContains(t, err, "want finite values")
}

// TestStoreBaselineRefusesAlteredRuns: the ttfts of two stored runs
// edited in place, each file's size kept, turn a clean A/A comparison
// into exit 2 that names the altered file, never into a verdict.
func TestStoreBaselineRefusesAlteredRuns(t *testing.T) {
	now := time.Now().UTC()
	tr := newStoreTrial(storeQuietNoise, 1)
	var main8 [][]float64
	for range 8 {
		main8 = append(main8, tr.run(0))
	}
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Create(dir)
	require.NoError(t, err)
	addStored(t, st, storedAdd{runner: "cpu2", commit: "c1", added: now.Add(-48 * time.Hour), sha: "v1", runs: main8}, tr.sched)
	var args []string
	for i := range 2 {
		f := filepath.Join(t.TempDir(), fmt.Sprintf("base-%d.json", i+1))
		require.NoError(t, os.WriteFile(f, storeResult(t, "chat", "v1", tr.run(0), tr.sched, nil), 0o644))
		args = append(args, "-fresh-base", f)
	}
	for i := range 8 {
		f := filepath.Join(t.TempDir(), fmt.Sprintf("head-%d.json", i+1))
		require.NoError(t, os.WriteFile(f, storeResult(t, "chat", "v1", tr.run(0), tr.sched, nil), 0o644))
		args = append(args, f)
	}
	args = append([]string{"-sequential", "-baseline-store", dir, "-runner", "cpu2"}, args...)
	code, out, errOut := runHistoryMain(t, args...)
	require.Equal(t, ExitPass, code, out+errOut)

	var altered []string
	for _, n := range []int{2, 5} {
		files, err := filepath.Glob(filepath.Join(dir, "cpu2", "c1", "*", fmt.Sprintf("chat.bench.%d.json", n)))
		require.NoError(t, err)
		require.Len(t, files, 1)
		data, err := os.ReadFile(files[0])
		require.NoError(t, err)
		// Every TTFT's first digit after "0." raised by one (9 to 8): slower
		// runs, of the same size.
		s := string(data)
		i := strings.Index(s, `"ttfts":[`)
		require.GreaterOrEqual(t, i, 0)
		end := i + strings.Index(s[i:], "]")
		b := []byte(s)
		for j := i; j+2 < end; j++ {
			if (j == i+len(`"ttfts":[`)-1 || b[j] == ',') && b[j+1] == '0' && b[j+2] == '.' && j+3 < end {
				if b[j+3] < '9' {
					b[j+3]++
				} else {
					b[j+3]--
				}
			}
		}
		require.Len(t, b, len(data))
		require.NotEqual(t, data, b)
		require.NoError(t, os.WriteFile(files[0], b, 0o644))
		altered = append(altered, files[0])
	}
	code, out, errOut = runHistoryMain(t, args...)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Equal(t, ExitBadInput, code)
	require.Contains(t, errOut, altered[0]+": altered: SHA-256")
	require.NotContains(t, out, "PASS")
}
