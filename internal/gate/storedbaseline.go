package gate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/servegate/servegate/internal/store"
)

// The stored baseline's drift check (docs/verdicts.md, "A baseline from
// history"). Fresh base runs made beside head's are compared with the
// stored runs of the baseline, run for run (one schedule: the scenario's
// seed), median TTFT as the verdict judges it. The drift is detected, and
// the stored baseline not used, when the mean log ratio fresh/stored of
// the fresh runs is past driftShare of the tolerance (as a log ratio) or
// significantly away from 0 (two-sided, at driftZ standard errors) and
// past half that limit. The median is precise enough that a drift of a
// fraction of a percent is significant; one below a quarter of the
// tolerance moves the verdict by less than that, and is let through.
const (
	driftShare = 0.5
	driftZ     = 1.96
)

// A Drift is the outcome of the drift check of a stored baseline.
type Drift struct {
	// Runs is the number of fresh base runs checked.
	Runs int `json:"runs"`
	// D is the mean log ratio fresh/stored of the median TTFT (exp(D)-1 is
	// the drift), SE its standard error, Limit the drift limit as a log
	// ratio.
	D     float64 `json:"d"`
	SE    float64 `json:"se"`
	Limit float64 `json:"limit"`
	// Detected says the stored baseline no longer describes this
	// machine; Why says it in words.
	Detected bool   `json:"detected"`
	Why      string `json:"why"`
}

// CheckDrift judges the estimates of fresh base runs against the stored
// runs they were paired with (base: the stored run, head: the fresh one)
// under the relative tolerance of the gated figure. The variance of the
// mean is pooled as Sequential.Decide pools its pairs' (the larger of the
// bootstraps' and, from 3 runs, the spread between runs).

// storeUnit is the one figure the stored baseline gates: median TTFT,
// by the same sequential test as -sequential. The median, not the p99:
// its standard error is about a third of the p99's on the same
// requests, so a drift and a regression of the tolerance stand clear of
// noise in a few runs. Goodput and the fail ratio
// need pairs run at the same moment, which stored runs are not; the
// fresh paired mode (-sequential) gates them.
const (
	storeUnit = "ttft-p50-sec"
	storeQ    = 0.5
)

func CheckDrift(est []PairEstimate, tolerance float64) (Drift, error) {
	return checkDrift(est, tolerance, driftShare)
}

// checkDrift is CheckDrift with the drift limit at share of the
// tolerance (the calibration tries others).
func checkDrift(est []PairEstimate, tolerance, share float64) (Drift, error) {
	if len(est) == 0 {
		return Drift{}, errors.New("drift: no fresh base run: the drift of the machine since the baseline cannot be checked")
	}
	if !(tolerance > 0 && tolerance < 1) {
		return Drift{}, fmt.Errorf("drift: tolerance %v: want a relative tolerance in (0, 1)", tolerance)
	}
	for i, e := range est {
		if math.IsNaN(e.D) || math.IsInf(e.D, 0) || !(e.SE >= 0) || math.IsInf(e.SE, 0) {
			return Drift{}, fmt.Errorf("drift: fresh run %d: log ratio %v, standard error %v: want finite values", i+1, e.D, e.SE)
		}
	}
	d := Drift{Runs: len(est), Limit: share * math.Log(1+tolerance)}
	// The fresh runs pool as the verdict's pairs do, with the spread
	// between runs taken as exact.
	d.D, d.SE = Sequential{}.pool(est)
	drift := fmt.Sprintf("%s (±%.1f%%) over %d fresh base run(s)", pct(math.Expm1(d.D)), 100*d.SE, d.Runs)
	limit := fmt.Sprintf("±%.2f%%", 100*math.Expm1(d.Limit))
	switch {
	case math.Abs(d.D) > d.Limit:
		d.Detected = true
		d.Why = fmt.Sprintf("drift: today's base differs from the stored baseline by %s in median TTFT, past the drift limit of %s", drift, limit)
	case math.Abs(d.D) > driftZ*d.SE && math.Abs(d.D) > d.Limit/2:
		d.Detected = true
		d.Why = fmt.Sprintf("drift: today's base differs from the stored baseline by %s in median TTFT, significantly (more than %.2f standard errors)", drift, driftZ)
	default:
		d.Why = fmt.Sprintf("no drift: today's base is within %s of the stored baseline in median TTFT, %s, not significant", limit, drift)
	}
	return d, nil
}

// A StoreInput is what "gate -sequential -baseline-store" judges.
type StoreInput struct {
	// Store and Query find the baseline; the query's Scenario and
	// ScenarioSHA are taken from head's files when empty (a ScenarioSHA
	// given must match them).
	Store *store.Store
	Query BaselineQuery
	// Heads are head's detailed result files, in the order they ran;
	// Fresh the fresh base runs', Fresh[i] run beside Heads[i].
	Heads, Fresh []string
}

// mainStoreSequential is "gate -sequential -baseline-store DIR -runner R
// [-base-commit C] [-scenario-version V] [-baseline-max-age DAYS]
// -fresh-base F1 [-fresh-base F2 ...] HEAD1 [HEAD2 ...]": JudgeStored as
// a command. Exit 0 no regression, 1 regression, 2 bad input, a
// baseline that cannot serve (a drift among them), too noisy to judge
// at the cap, or not decided yet with the head runs given ("run another
// head run").
func mainStoreSequential(in StoreInput, pol *Policy, stdout io.Writer, fail func(error) int) int {
	v, err := JudgeStored(in, pol, stdout)
	if err != nil {
		return fail(err)
	}
	switch v.Decision {
	case NoRegression:
		fmt.Fprintf(stdout, "PASS %s: %s, stopped: %s\n", storeUnit, v.Used, v.Why)
		return ExitPass
	case Regression:
		fmt.Fprintf(stdout, "FAIL %s: %s, stopped: %s\n", storeUnit, v.Used, v.Why)
		return ExitRegression
	case Undecided:
		return fail(fmt.Errorf("-baseline-store: %s: %s", storeUnit, v.Why))
	}
	return fail(fmt.Errorf("-baseline-store: %s: not decided yet: %s; run another head run (at most %d in all)", storeUnit, v.Why, DefaultSequential().MaxPairs))
}

// A StoredVerdict is the stored baseline's verdict on one scenario's
// head runs so far.
type StoredVerdict struct {
	// Decision is Continue while the test asks for another head run.
	Decision Decision
	// Pairs is the number of head runs judged.
	Pairs int
	// Why says why the test stopped, or goes on; Used what it used.
	Why, Used string
}

// A NoBaselineError says why a stored baseline cannot serve: none fits
// the query, a stored run cannot be read or matched, or the fresh base
// runs show a drift. Base and head paired can still judge.
type NoBaselineError struct{ Err error }

func (e *NoBaselineError) Error() string { return e.Err.Error() }

func (e *NoBaselineError) Unwrap() error { return e.Err }

// JudgeStored judges head's runs of one scenario against main's stored
// runs instead of base's, run k against stored run k
// (docs/verdicts.md). The fresh base runs check the drift first. It
// writes what it measured to w, a line a run. A *NoBaselineError is a
// baseline that cannot serve; another error is bad input.
func JudgeStored(in StoreInput, pol *Policy, w io.Writer) (StoredVerdict, error) {
	fail := func(err error) (StoredVerdict, error) { return StoredVerdict{}, err }
	noBaseline := func(err error) (StoredVerdict, error) { return StoredVerdict{}, &NoBaselineError{Err: err} }
	s := DefaultSequential()
	switch {
	case len(in.Heads) == 0:
		return fail(errors.New("-baseline-store: want head's detailed result files HEAD1 [HEAD2 ...], in the order they ran"))
	case len(in.Heads) > s.MaxPairs:
		return fail(fmt.Errorf("-baseline-store: %d head runs, more than the cap of %d", len(in.Heads), s.MaxPairs))
	case len(in.Fresh) == 0:
		return fail(errors.New("-baseline-store: no -fresh-base run: the drift of the machine since main's runs were stored cannot be checked; give at least one fresh base run made beside head's (servegate compare -mode stored makes them)"))
	case len(in.Fresh) > len(in.Heads):
		return fail(fmt.Errorf("-baseline-store: %d fresh base runs for %d head runs: each fresh base run is made beside the head run of its position", len(in.Fresh), len(in.Heads)))
	}
	rule, ok := pol.rule(storeUnit)
	if !ok || !rule.Tolerance.Relative {
		return fail(fmt.Errorf("-baseline-store: the policy has no relative tolerance for %s, the figure the sequential test gates", storeUnit))
	}
	identify := func(what, path string) (resultIdentity, error) {
		var id resultIdentity
		data, err := readBounded(path)
		if err != nil {
			return id, fmt.Errorf("-baseline-store: %s: %w", what, err)
		}
		if err := decodeResultIdentity(data, &id); err != nil {
			return id, fmt.Errorf("-baseline-store: %s %s: %w", what, path, err)
		}
		if why := id.refused(); why != "" {
			return id, fmt.Errorf("-baseline-store: %s %s: %s: its figures are not used", what, path, why)
		}
		return id, nil
	}
	q := in.Query
	// The files are checked here and read again when judged, so that at
	// most two are held in memory at once.
	files := append(append([]string(nil), in.Heads...), in.Fresh...)
	for i, f := range files {
		what := fmt.Sprintf("head run %d", i+1)
		if i >= len(in.Heads) {
			what = fmt.Sprintf("fresh base run %d", i-len(in.Heads)+1)
		}
		id, err := identify(what, f)
		if err != nil {
			return fail(err)
		}
		if i == 0 {
			q.Scenario = cmp.Or(q.Scenario, id.Scenario)
			if id.ScenarioSHA == "" {
				return fail(fmt.Errorf("-baseline-store: %s %s: no scenario-sha: the scenario version it ran cannot be matched to the baseline's", what, f))
			}
			if q.ScenarioSHA != "" && q.ScenarioSHA != id.ScenarioSHA {
				return fail(fmt.Errorf("-baseline-store: %s %s ran scenario-sha %s, not the -scenario-version %s given", what, f, shortSHA(id.ScenarioSHA), shortSHA(q.ScenarioSHA)))
			}
			q.ScenarioSHA = id.ScenarioSHA
		}
		if id.Scenario != q.Scenario || id.ScenarioSHA != q.ScenarioSHA {
			return fail(fmt.Errorf("-baseline-store: %s %s is of scenario %s at scenario-sha %s, head run 1 of %s at %s: one call judges one scenario at one version", what, f, id.Scenario, shortSHA(id.ScenarioSHA), q.Scenario, shortSHA(q.ScenarioSHA)))
		}
	}
	q.Need = max(s.MinPairs, len(in.Heads))
	b, err := FindBaseline(in.Store, q)
	if err != nil {
		return noBaseline(err)
	}
	fmt.Fprintf(w, "baseline: %s of main's commit %s on runner type %s (committed %s, added %s), %d stored run(s), scenario-sha %s\n",
		b.Benchmark, b.Commit.ID, q.Runner, b.Commit.Time.Format(time.RFC3339), b.Added.Format(time.RFC3339), len(b.Runs), shortSHA(q.ScenarioSHA))
	rng := rand.New(rand.NewPCG(1, 27))
	// estimate judges today's run (file, called what) against a stored
	// run: a stored run that cannot be read or matched is a baseline
	// error (servegate compare -mode stored falls back from it), today's a
	// bad input.
	estimate := func(what, file string, stored StoredRun) (PairEstimate, int, error) {
		noBase := func(err error) (PairEstimate, int, error) { return PairEstimate{}, 0, &NoBaselineError{Err: err} }
		name := fmt.Sprintf("%s (%s) against stored run %s", what, file, stored.Path)
		base, err := stored.Read()
		if err == nil {
			_, err = readPairedResult(base)
		}
		if err != nil {
			return noBase(fmt.Errorf("baseline: stored run %s: %w", stored.Path, err))
		}
		run, err := readBounded(file)
		if err == nil {
			_, err = readPairedResult(run)
		}
		if err != nil {
			return PairEstimate{}, 0, fmt.Errorf("-baseline-store: %s %s: %w", what, file, err)
		}
		pairs, dropped, err := RequestPairsFromResults(name, base, run)
		if err != nil {
			// Both files read, so they are not a pair: a stored run of
			// the same scenario version but another schedule (another
			// servegate's arrival process) cannot serve.
			return noBase(fmt.Errorf("baseline: %w (a stored run and a run of today are matched request by request through the scenario's seeded schedule)", err))
		}
		e, err := BootstrapPair(pairs, storeQ, 0, 0, rng)
		if err != nil {
			return PairEstimate{}, 0, fmt.Errorf("-baseline-store: %s: %w", name, err)
		}
		return e, dropped, nil
	}
	var drift []PairEstimate
	for j, f := range in.Fresh {
		e, dropped, err := estimate(fmt.Sprintf("fresh base run %d", j+1), f, b.Runs[j])
		if err != nil {
			return fail(err)
		}
		drift = append(drift, e)
		fmt.Fprintf(w, "fresh base run %d: median TTFT %s (±%.1f%%) against stored run %d, %d request pairs, %d left out (failed)\n",
			j+1, pct(math.Expm1(e.D)), 100*e.SE, j+1, e.Requests, dropped)
	}
	d, err := CheckDrift(drift, rule.Tolerance.Amount)
	if err != nil {
		return fail(fmt.Errorf("-baseline-store: %w", err))
	}
	if d.Detected {
		return noBaseline(fmt.Errorf("-baseline-store: %s: the stored baseline (commit %s) no longer describes this machine; compare base and head paired instead (servegate compare)", d.Why, b.Commit.ID))
	}
	fmt.Fprintln(w, d.Why)
	var est []PairEstimate
	var l Look
	for k, f := range in.Heads {
		e, dropped, err := estimate(fmt.Sprintf("head run %d", k+1), f, b.Runs[k])
		if err != nil {
			return fail(err)
		}
		est = append(est, e)
		fmt.Fprintf(w, "head run %d: median TTFT %s (±%.1f%%) against stored run %d, %d request pairs, %d left out (failed), block %d\n",
			k+1, pct(math.Expm1(e.D)), 100*e.SE, k+1, e.Requests, dropped, e.Block)
		if l, err = s.Decide(est, rule.Tolerance.Amount, -1); err != nil {
			return fail(fmt.Errorf("-baseline-store: %w", err))
		}
		if l.Decision != Continue {
			break
		}
	}
	used := fmt.Sprintf("%d head run(s) against the stored baseline, %d fresh base run(s) for the drift check", l.Pairs, d.Runs)
	return StoredVerdict{Decision: l.Decision, Pairs: l.Pairs, Why: l.Why, Used: used}, nil
}

// readBounded reads a result file of at most store.MaxFileBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, store.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > store.MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes, the most a result file may hold", path, store.MaxFileBytes)
	}
	return data, nil
}

// decodeResultIdentity reads the run's identity from a result file.
func decodeResultIdentity(data []byte, id *resultIdentity) error {
	if err := json.NewDecoder(bytes.NewReader(nonFiniteToNull(data))).Decode(id); err != nil {
		return fmt.Errorf("read result: %w", err)
	}
	return nil
}
