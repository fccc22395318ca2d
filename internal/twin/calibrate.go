package twin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/sim"
	"github.com/servegate/servegate/internal/stats"
	"github.com/servegate/servegate/internal/store"
)

// metricsRecord is a measured request.
type metricsRecord = metrics.Record

// Goal is the largest relative error of a figure (the median over the
// runs of |fitted - measured| / measured) that a fit may have and still
// write a profile without Options.Force.
const Goal = 0.10

// DefaultMaxEvals is Options.MaxEvals when 0: replays of all runs the
// search may make.
const DefaultMaxEvals = 600

// MaxEvals is the most replays Options.MaxEvals may ask for.
const MaxEvals = 100000

// Options shape a calibration.
type Options struct {
	// Given are the configuration values the user states (flags); they
	// win over what the runs' servers state.
	Given Given
	// Model is the profile's model name; default the runs' model_id.
	Model string
	// MaxEvals bounds the search in replays of all runs: two thirds of
	// it for the first fit (twice, when a run has a concurrency limit:
	// replayed under it and at its starts), a third for the refinement
	// with the jitter. 0 means DefaultMaxEvals, at most MaxEvals.
	MaxEvals int
	// Replay runs the replays; nil means sim.Replay.
	Replay Replayer
}

// A RunResidual is one run's headline figures, measured and fitted.
type RunResidual struct {
	// Path is the run's file.
	Path string
	// Requests is the number of requests fitted.
	Requests int
	// Measured and Fitted are the figures of the run and of its replay
	// under the fitted profile.
	Measured, Fitted Figures
	// Replay says how the run was replayed: "open loop" (at its measured
	// starts), "closed loop of N" (under its concurrency limit), or "open
	// loop (closer than a closed loop of N)".
	Replay string
}

// RelErr returns the relative error of each figure, (fitted - measured)
// / measured, in FigureNames' order.
func (r RunResidual) RelErr() []float64 {
	m, f := r.Measured.values(), r.Fitted.values()
	out := make([]float64, len(m))
	for i := range m {
		out[i] = (f[i] - m[i]) / math.Max(m[i], 1e-9)
	}
	return out
}

// A Result is a calibration: the profile, its residuals and what the
// data could not pin down.
type Result struct {
	// Params is the fitted profile.
	Params sim.Params
	// Inputs are the files fitted, in order.
	Inputs []string
	// Settings are the configuration values and their sources.
	Settings []Setting
	// Runs are the residuals per run.
	Runs []RunResidual
	// MedianErr is, per figure (FigureNames' order), the median over the
	// runs of the absolute relative error.
	MedianErr []float64
	// Met is true when every MedianErr is at most Goal.
	Met bool
	// Unpinned explains each fitted knob the data could not pin down.
	Unpinned []string
	// Evals is the number of replays of all runs the search made; Loss
	// its final loss.
	Evals int
	Loss  float64
}

// An InputError is a run calibration refuses: no profile is written.
type InputError struct {
	// Path is the file (or files, comma-separated) at fault.
	Path string
	// Field names the result field at fault, "" when the whole run is.
	Field string
	// Reason says what is wrong.
	Reason string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", e.Path, e.Field, e.Reason)
}

// check refuses a run that cannot be fitted: a run against a twin, an
// invalid or interrupted run, failed requests, metrics that contradict
// the records, and prompts the server partly served from its prefix
// cache (the records do not say which tokens were shared).
func (r *Run) check() error {
	if why := r.simulatorMarks(); why != "" {
		return &InputError{r.Path, "", "a run against a simulator, not a server (" + why + "); calibrate a twin from runs against the real server"}
	}
	if why := store.Refusal(r.Interrupted, r.Invalid); why != "" {
		return &InputError{r.Path, "", why + "; calibrate from valid runs"}
	}
	out := 0
	for i, rec := range r.Records {
		if !rec.Success {
			return &InputError{r.Path, "errors", fmt.Sprintf("request %d failed (%s: %s); calibrate needs runs without failed requests", i, rec.Failure, rec.Error)}
		}
		if rec.OutputTokens < 1 || rec.TTFT <= 0 {
			return &InputError{r.Path, "output_lens", fmt.Sprintf("request %d has no output token", i)}
		}
		if promptLen(rec) < 1 {
			return &InputError{r.Path, "prompt_lens", fmt.Sprintf("request %d has no prompt length", i)}
		}
		out += rec.OutputTokens
	}
	if gen, ok := r.metric("generation_tokens"); ok {
		if math.Abs(gen-float64(out)) > math.Max(2, 0.02*float64(out)) {
			return &InputError{r.Path, "server_metrics.generation_tokens", fmt.Sprintf(
				"the server generated %.0f tokens during the run, the records hold %d: the metrics contradict the records (another client on the server, or a server restart)", gen, out)}
		}
	}
	in := 0
	for _, rec := range r.Records {
		in += rec.ServerPromptTokens
	}
	if pt, ok := r.metric("prompt_tokens"); ok && in > 0 {
		if math.Abs(pt-float64(in)) > math.Max(2, 0.02*float64(in)) {
			return &InputError{r.Path, "server_metrics.prompt_tokens", fmt.Sprintf(
				"the server prefilled %.0f prompt tokens during the run, the records' usage says %d: the metrics contradict the records", pt, in)}
		}
	}
	// The warm-ups send the first prompt, so the run's first request may
	// find it cached: one prompt's worth of hits is no shared prefix.
	longest := 0
	for _, rec := range r.Records {
		longest = max(longest, promptLen(rec))
	}
	if hits, ok := r.metric("prefix_cache_hits"); ok && hits > math.Max(0.01*float64(in), float64(longest)) {
		return &InputError{r.Path, "server_metrics.prefix_cache_hits", fmt.Sprintf(
			"the server served %.0f prompt tokens from its prefix cache; the records do not say which, so the replay cannot reproduce them: calibrate from runs whose prompts share no prefix", hits)}
	}
	return nil
}

// promptLen is the prompt's length as the server counted it, else as the
// dataset did.
func promptLen(rec metricsRecord) int {
	if rec.ServerPromptTokens > 0 {
		return rec.ServerPromptTokens
	}
	return rec.PromptLen
}

// prepare turns a run into replay input: each request with a prompt of
// its length whose tokens no other request shares, and its measured
// output length. An open-loop run's requests arrive at their measured
// starts. A run with a concurrency limit is replayed under the same
// limit, its requests arriving when the schedule wanted them: a request
// that waited for a slot was sent the moment a step ended, and the
// replay must send it at the end of its own step, not at a measured
// instant that falls inside one.
func prepare(r *Run, salt int) replayRun {
	rr := prepareAs(r, salt, max(r.MaxConcurrency, 0))
	if rr.opt.MaxConcurrency > 0 {
		open := prepareAs(r, salt, 0)
		rr.open = &open
	}
	return rr
}

// prepareAs is prepare under a concurrency limit (0: open loop at the
// measured starts).
func prepareAs(r *Run, salt, limit int) replayRun {
	rr := replayRun{path: r.Path}
	rr.opt.MaxConcurrency = limit
	arrival := func(rec metricsRecord) time.Duration {
		if rr.opt.MaxConcurrency > 0 {
			return min(rec.Scheduled, rec.Start)
		}
		return rec.Start
	}
	var times [][]float64
	recs := slices.Clone(r.Records)
	slices.SortStableFunc(recs, func(a, b metricsRecord) int {
		return cmp.Or(cmp.Compare(arrival(a), arrival(b)), cmp.Compare(a.Start, b.Start))
	})
	for i, rec := range recs {
		n := promptLen(rec)
		prompt := make([]int, n)
		for j := range prompt {
			prompt[j] = 1 + (salt*1_000_003+i*7919+j*31)%120000
		}
		rr.reqs = append(rr.reqs, sim.VirtualRequest{Arrival: max(arrival(rec), 0), Prompt: prompt, MaxTokens: rec.OutputTokens})
		m := measuredOf(rec)
		rr.meas = append(rr.meas, m)
		times = append(times, m.chunkAt)
	}
	rr.figs = figures(times)
	rr.opt.MaxSimulated = 100*r.Duration + time.Hour
	return rr
}

// measuredOf reads a record's chunk times and the tokens through each
// chunk: from per-chunk usage when the server sent it, else one token a
// chunk, else (fewer chunks than tokens, no usage per chunk) spread
// evenly.
func measuredOf(rec metricsRecord) measured {
	at := rec.TTFT.Seconds()
	m := measured{chunkAt: []float64{at}}
	for _, g := range rec.ITL {
		at += g.Seconds()
		m.chunkAt = append(m.chunkAt, at)
	}
	chunks := len(m.chunkAt)
	m.chunkTok = make([]int, chunks)
	switch {
	case len(rec.ChunkTokens) == chunks:
		c := 0
		for k, n := range rec.ChunkTokens {
			c += max(n, 1)
			m.chunkTok[k] = min(c, rec.OutputTokens)
		}
	case chunks >= rec.OutputTokens:
		for k := range m.chunkTok {
			m.chunkTok[k] = min(k+1, rec.OutputTokens)
		}
	default:
		for k := range m.chunkTok {
			m.chunkTok[k] = max(1, int(math.Round(float64(k+1)*float64(rec.OutputTokens)/float64(chunks))))
		}
	}
	return m
}

// sizeCheck refuses runs too small to fit: fewer requests than twice the
// fitted knobs, or fewer distinct batch sizes and prompt lengths than
// the knobs (the fixed and per-sequence costs need two batch sizes
// apart at least).
func sizeCheck(runs []*Run) error {
	var paths []string
	batches, prompts := map[int]bool{}, map[int]bool{}
	n := 0
	for _, r := range runs {
		paths = append(paths, r.Path)
		for b := range batchSizes(r.Records) {
			batches[b] = true
		}
		for _, rec := range r.Records {
			prompts[promptLen(rec)] = true
			if len(rec.ITL) > 0 {
				n++
			}
		}
	}
	k := len(costKnobs)
	why := ""
	switch {
	case n < 2*k:
		why = fmt.Sprintf("%d requests with two or more output chunks, fewer than %d (twice the %d fitted knobs)", n, 2*k, k)
	case len(batches) < 2:
		why = fmt.Sprintf("every token came at one batch size (%d requests in flight): the fixed and per-sequence costs cannot be told apart", firstKey(batches))
	case len(batches)+len(prompts) < k:
		why = fmt.Sprintf("%d distinct batch sizes and %d distinct prompt lengths, fewer than the %d fitted knobs (%s)", len(batches), len(prompts), k, knobList())
	}
	if why != "" {
		return &InputError{strings.Join(paths, ", "), "", "too small to fit: " + why + "; add a run at another concurrency or prompt length"}
	}
	return nil
}

func firstKey(m map[int]bool) int {
	for k := range m {
		return k
	}
	return 0
}

func knobList() string {
	var s []string
	for _, k := range costKnobs {
		s = append(s, k.key)
	}
	return strings.Join(s, ", ")
}

// batchSizes are the numbers of requests in flight at each measured
// chunk of the run: the batch sizes the server ran at, as near as the
// client can tell.
func batchSizes(recs []metricsRecord) map[int]bool {
	var starts, ends []float64
	for _, r := range recs {
		starts = append(starts, r.Start.Seconds())
		ends = append(ends, (r.Start + r.Latency).Seconds())
	}
	sortFloats(starts)
	sortFloats(ends)
	out := map[int]bool{}
	for _, r := range recs {
		for _, t := range measuredOf(r).chunkAt {
			at := r.Start.Seconds() + t
			n := countLE(starts, at) - countLT(ends, at)
			out[max(n, 1)] = true
		}
	}
	return out
}

// Calibrate fits a profile to the runs. Bad input is an *InputError
// naming the file (and field); a fit that misses Goal is a Result with
// Met false, for the caller to report (and not write).
func Calibrate(ctx context.Context, runs []*Run, opt Options) (*Result, error) {
	if len(runs) == 0 {
		return nil, errors.New("calibrate: no runs")
	}
	for _, r := range runs {
		if err := r.check(); err != nil {
			return nil, err
		}
	}
	if err := sizeCheck(runs); err != nil {
		return nil, err
	}
	if opt.MaxEvals == 0 {
		opt.MaxEvals = DefaultMaxEvals
	}
	if opt.MaxEvals < 0 || opt.MaxEvals > MaxEvals {
		return nil, fmt.Errorf("calibrate: max evals %d: want 1 to %d", opt.MaxEvals, MaxEvals)
	}
	if opt.Replay == nil {
		opt.Replay = sim.Replay
	}
	p := sim.DefaultParams()
	p.Model = opt.Model
	if p.Model == "" {
		p.Model = runs[0].ModelID
	}
	p.Jitter, p.Seed, p.Slowdown, p.EOSMinRatio = 0, 0, 1, 1
	res := &Result{}
	var err error
	if res.Settings, err = settings(runs, opt.Given, &p); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	f := &fitter{base: p, replay: opt.Replay}
	for i, r := range runs {
		res.Inputs = append(res.Inputs, r.Path)
		f.runs = append(f.runs, prepare(r, i))
	}
	// Fit without jitter, measure the jitter the fit leaves, then refine
	// the fit with it.
	fr, err := f.fitLoops(ctx, 2*opt.MaxEvals/3)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	j, err := f.jitter(ctx, f.params(fr.x))
	if err != nil {
		return nil, fmt.Errorf("calibrate: jitter: %w", err)
	}
	f.base.Jitter = math.Round(j*1000) / 1000
	if f.base.Jitter > 0 {
		if fr, err = f.refine(ctx, fr.x, opt.MaxEvals/3); err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
	}
	p = f.params(fr.x)
	for _, k := range fr.atLower {
		knob := costKnobOf(k)
		knob.set(&p, 0)
		res.Unpinned = append(res.Unpinned, fmt.Sprintf("%s: at the search's lower bound (%g %s): the runs show no such cost; written as 0", k, knob.lo, knob.unit))
	}
	for _, k := range fr.flat {
		what := k + ": a ±25% change"
		if strings.Contains(k, " ") {
			what = k + ": moving these together (signs as given) by ±25%"
		}
		res.Unpinned = append(res.Unpinned, what+" moves the fit's loss by less than 1%: the runs do not pin it down (vary the batch size, prompt or output length)")
	}
	res.Evals, res.Loss = fr.evals, fr.loss
	for i := range f.runs {
		r := &f.runs[i]
		_, figs, _, err := f.runLoss(ctx, r, p)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		res.Runs = append(res.Runs, RunResidual{Path: r.path, Requests: len(r.meas), Measured: r.figs, Fitted: figs, Replay: replayMode(r)})
	}
	res.Params = p
	res.MedianErr, res.Met = goal(res.Runs)
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate: the fitted profile: %w", err)
	}
	return res, nil
}

// goal returns the median over runs of each figure's absolute relative
// error, and whether all are within Goal.
func goal(runs []RunResidual) ([]float64, bool) {
	errs := make([][]float64, len(FigureNames))
	for _, r := range runs {
		for j, e := range r.RelErr() {
			errs[j] = append(errs[j], math.Abs(e))
		}
	}
	med := make([]float64, len(errs))
	met := true
	for j, e := range errs {
		med[j] = orZero(stats.Median(e))
		met = met && med[j] <= Goal
	}
	return med, met
}

func costKnobOf(key string) costKnob {
	for _, k := range costKnobs {
		if k.key == key {
			return k
		}
	}
	panic("twin: no cost knob " + key)
}

func sortFloats(a []float64) { sort.Float64s(a) }

// countLE is the number of elements of sorted a at most x.
func countLE(a []float64, x float64) int {
	return sort.Search(len(a), func(i int) bool { return a[i] > x })
}

// countLT is the number of elements of sorted a below x.
func countLT(a []float64, x float64) int { return sort.SearchFloat64s(a, x) }

// fitLoops fits the runs as prepared and, when some have a concurrency
// limit, fits them again with those replayed open-loop at their measured
// starts, and keeps the better fit. Under the limit a request sent the
// instant a slot frees joins the next step, as on a server that takes no
// time to hand a request to its engine; at its measured start it reaches
// the engine mid-step and waits for the next, as on a real server, whose
// HTTP, tokenization and hand-over take milliseconds (on real vLLM the
// closed loop's median TTFT came out 50% low under its limit, 20% at its
// starts). The simulator has no such intake time yet; with it, the limit
// would do.
func (f *fitter) fitLoops(ctx context.Context, maxEvals int) (fitResult, error) {
	var open []replayRun
	for _, r := range f.runs {
		if r.open != nil {
			o := *r.open
			o.note = fmt.Sprintf("open loop (closer than a closed loop of %d)", r.opt.MaxConcurrency)
			open = append(open, o)
		} else {
			open = append(open, r)
		}
	}
	if len(open) == 0 || slices.IndexFunc(f.runs, func(r replayRun) bool { return r.open != nil }) < 0 {
		return f.fit(ctx, maxEvals)
	}
	fr, err := f.fit(ctx, maxEvals)
	if err != nil {
		return fitResult{}, err
	}
	g := &fitter{base: f.base, runs: open, replay: f.replay}
	gr, err := g.fit(ctx, maxEvals)
	if err != nil {
		return fitResult{}, err
	}
	f.evals += g.evals
	if gr.loss < fr.loss {
		f.runs, fr = g.runs, gr
	}
	fr.evals = f.evals
	return fr, nil
}

// replayMode says how a run was replayed.
func replayMode(r *replayRun) string {
	switch {
	case r.note != "":
		return r.note
	case r.opt.MaxConcurrency > 0:
		return fmt.Sprintf("closed loop of %d", r.opt.MaxConcurrency)
	}
	return "open loop"
}
