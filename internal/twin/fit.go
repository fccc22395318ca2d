package twin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/sim"
	"github.com/servegate/servegate/internal/stats"
)

// This file fits the simulator's step cost model to measured runs: each
// run is replayed in virtual time (sim.Replay) with its own arrivals,
// prompt and output lengths, and the six costs (four per step, two in the front end) are moved (Nelder-Mead
// on their logarithms) until the replay's per-request TTFT and ITL match
// the measured ones. The jitter is then the spread of the measured ITLs
// that the fitted model does not explain.

// A Replayer runs requests through a profile in virtual time; sim.Replay
// is the one calibration uses. Tests of the optimiser alone may pass
// another.
type Replayer func(ctx context.Context, p sim.Params, reqs []sim.VirtualRequest, opt sim.ReplayOptions) ([]sim.VirtualResult, error)

// A costKnob is one fitted parameter of the step cost model, with the
// range the search keeps it in (the knob's own maximum above; below, a
// value too small to matter, written as 0).
type costKnob struct {
	key    string
	unit   string
	lo, hi float64
	get    func(*sim.Params) float64
	set    func(*sim.Params, float64)
}

// costKnobs are the fitted parameters, in the order reports give them.
var costKnobs = []costKnob{
	{"step_fixed_ms", "ms", 1e-4, 60000, func(p *sim.Params) float64 { return p.StepFixedMS }, func(p *sim.Params, v float64) { p.StepFixedMS = v }},
	{"prefill_token_us", "µs", 1e-4, 1e6, func(p *sim.Params) float64 { return p.PrefillTokenUS }, func(p *sim.Params, v float64) { p.PrefillTokenUS = v }},
	{"seq_us", "µs", 1e-3, 1e6, func(p *sim.Params) float64 { return p.SeqUS }, func(p *sim.Params, v float64) { p.SeqUS = v }},
	{"context_token_ns", "ns", 1e-4, 1e6, func(p *sim.Params) float64 { return p.ContextTokenNS }, func(p *sim.Params, v float64) { p.ContextTokenNS = v }},
	// A real server's front end (HTTP, tokenization, the hop to the
	// engine process) delays every request before the engine sees it:
	// a closed loop's next request misses the step its slot freed at,
	// which the four step costs alone cannot give (the batch run of the
	// twin check came out 20-50% low in TTFT without it).
	{"frontend_ms", "ms", 1e-4, 60000, func(p *sim.Params) float64 { return p.FrontendMS }, func(p *sim.Params, v float64) { p.FrontendMS = v }},
	// The front end's serial part (one request at a time) staggers a
	// burst on its way to the engine: a closed loop's first wave, a
	// bursty run's clumps.
	{"frontend_serial_ms", "ms", 1e-4, 60000, func(p *sim.Params) float64 { return p.FrontendSerialMS }, func(p *sim.Params, v float64) { p.FrontendSerialMS = v }},
}

// Figures are a run's headline latencies, in milliseconds.
type Figures struct {
	MedianTTFT, P90TTFT, MedianITL float64
}

// names and values of Figures, in report order.
func (f Figures) values() []float64 { return []float64{f.MedianTTFT, f.P90TTFT, f.MedianITL} }

// FigureNames name Figures' values in reports.
var FigureNames = []string{"median TTFT", "p90 TTFT", "median ITL"}

// measured is one request as the client saw it, in seconds from its
// start: the first chunk and each later chunk, with the count of tokens
// through each chunk.
type measured struct {
	chunkAt  []float64
	chunkTok []int
}

// replayRun is one run prepared for replays.
type replayRun struct {
	path string
	reqs []sim.VirtualRequest
	opt  sim.ReplayOptions
	meas []measured
	figs Figures
	// open is, for a run with a concurrency limit, the same run replayed
	// open-loop at its measured starts; nil otherwise.
	open *replayRun
	// note says why the run is replayed as it is, when chosen.
	note string
}

// fitter replays the runs under candidate parameters.
type fitter struct {
	base   sim.Params
	runs   []replayRun
	replay Replayer
	evals  int
}

// predicted are the replay's times at the measured chunks of each request.
func predicted(m []measured, res []sim.VirtualResult, cap time.Duration) [][]float64 {
	out := make([][]float64, len(m))
	for i := range m {
		var tt []time.Duration
		if i < len(res) {
			tt = res[i].TokenTimes
		}
		p := make([]float64, len(m[i].chunkTok))
		for k, tok := range m[i].chunkTok {
			if tok-1 < len(tt) {
				p[k] = tt[tok-1].Seconds()
			} else {
				p[k] = cap.Seconds() // never came: as late as the replay ran
			}
		}
		out[i] = p
	}
	return out
}

// figures are the headline latencies of per-request chunk times.
func figures(times [][]float64) Figures {
	var ttft, itl []float64
	for _, t := range times {
		if len(t) == 0 {
			continue
		}
		ttft = append(ttft, t[0])
		for k := 1; k < len(t); k++ {
			itl = append(itl, t[k]-t[k-1])
		}
	}
	return Figures{
		MedianTTFT: 1000 * orZero(stats.Median(ttft)),
		P90TTFT:    1000 * orZero(stats.Quantile(ttft, 0.9)),
		MedianITL:  1000 * orZero(stats.Median(itl)),
	}
}

// orZero is x, or 0 for the NaN of no samples: a figure of nothing is 0,
// as vLLM's summary reports it.
func orZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// huber is the Huber loss of a residual, quadratic within delta.
func huber(r, delta float64) float64 {
	if a := math.Abs(r); a > delta {
		return delta * (a - delta/2)
	}
	return r * r / 2
}

// logRatio is log(pred/meas), both floored at a microsecond.
func logRatio(pred, meas float64) float64 {
	return math.Log(math.Max(pred, 1e-6) / math.Max(meas, 1e-6))
}

// params returns the base profile with the cost knobs at x (logarithms).
func (f *fitter) params(x []float64) sim.Params {
	p := f.base
	for i, k := range costKnobs {
		k.set(&p, math.Exp(x[i]))
	}
	return p
}

// runLoss replays one run under p and returns its loss and predicted
// figures. The loss weighs the run's headline figures (squared log
// ratios of median and p90 TTFT and median ITL) and each request's TTFT
// and mean ITL (Huber on the log ratio, so a few odd requests do not
// pull the fit).
func (f *fitter) runLoss(ctx context.Context, r *replayRun, p sim.Params) (float64, Figures, [][]float64, error) {
	res, err := f.replay(ctx, p, r.reqs, r.opt)
	if err != nil {
		return 0, Figures{}, nil, fmt.Errorf("replay %s: %w", r.path, err)
	}
	pred := predicted(r.meas, res, r.opt.MaxSimulated)
	pf := figures(pred)
	loss := 0.0
	for j, v := range pf.values() {
		e := logRatio(v, r.figs.values()[j])
		loss += 4 * e * e
	}
	var per, gaps float64
	n, ng := 0, 0
	for i, m := range r.meas {
		per += huber(logRatio(pred[i][0], m.chunkAt[0]), 0.3)
		if k := len(m.chunkAt) - 1; k > 0 {
			per += huber(logRatio((pred[i][k]-pred[i][0])/float64(k), (m.chunkAt[k]-m.chunkAt[0])/float64(k)), 0.3)
		}
		n++
		// Each gap on its own: the batch and its context change from
		// step to step, which tells the per-sequence cost from the
		// per-context-token one.
		for k := 1; k < len(m.chunkAt); k++ {
			gaps += huber(logRatio(pred[i][k]-pred[i][k-1], m.chunkAt[k]-m.chunkAt[k-1]), 0.2)
			ng++
		}
	}
	if n > 0 {
		loss += per / float64(n)
	}
	if ng > 0 {
		loss += gaps / float64(ng)
	}
	return loss, pf, pred, nil
}

// loss is the sum of the runs' losses at x.
func (f *fitter) loss(ctx context.Context, x []float64) (float64, error) {
	f.evals++
	p := f.params(x)
	total := 0.0
	for i := range f.runs {
		l, _, _, err := f.runLoss(ctx, &f.runs[i], p)
		if err != nil {
			return 0, err
		}
		total += l
	}
	return total, nil
}

// objective is the loss as the optimiser calls it, stopping when ctx is
// done.
func (f *fitter) objective(ctx context.Context) func([]float64) (float64, error) {
	return func(x []float64) (float64, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return f.loss(ctx, x)
	}
}

// bounds are the search's limits on the logarithms of the cost knobs.
func bounds() (lo, hi []float64) {
	for _, k := range costKnobs {
		lo, hi = append(lo, math.Log(k.lo)), append(hi, math.Log(k.hi))
	}
	return lo, hi
}

// nelderMead minimises f from x0 within [lo, hi] (each coordinate
// clamped), with an initial simplex of x0 plus step along each axis, for
// at most maxEvals evaluations. It returns the best point and its value.
func nelderMead(f func([]float64) (float64, error), x0, step, lo, hi []float64, maxEvals int) ([]float64, float64, error) {
	n := len(x0)
	clamp := func(x []float64) []float64 {
		for i := range x {
			x[i] = math.Max(lo[i], math.Min(hi[i], x[i]))
		}
		return x
	}
	type vertex struct {
		x []float64
		f float64
	}
	evals := 0
	eval := func(x []float64) (vertex, error) {
		evals++
		v, err := f(x)
		if math.IsNaN(v) {
			v = math.Inf(1)
		}
		return vertex{x, v}, err
	}
	simplex := make([]vertex, 0, n+1)
	for i := -1; i < n; i++ {
		x := slices.Clone(x0)
		if i >= 0 {
			x[i] += step[i]
		}
		v, err := eval(clamp(x))
		if err != nil {
			return nil, 0, err
		}
		simplex = append(simplex, v)
	}
	combine := func(c []float64, t float64, w []float64) []float64 { // c + t(w - c)
		x := make([]float64, n)
		for i := range x {
			x[i] = c[i] + t*(w[i]-c[i])
		}
		return clamp(x)
	}
	for evals < maxEvals {
		sort.SliceStable(simplex, func(a, b int) bool { return simplex[a].f < simplex[b].f })
		best, worst := simplex[0], simplex[n]
		spread := 0.0
		for _, v := range simplex[1:] {
			for i := range v.x {
				spread = math.Max(spread, math.Abs(v.x[i]-best.x[i]))
			}
		}
		if spread < 1e-3 && worst.f-best.f <= 1e-9*(1+math.Abs(best.f)) {
			break
		}
		c := make([]float64, n)
		for _, v := range simplex[:n] {
			for i := range c {
				c[i] += v.x[i] / float64(n)
			}
		}
		r, err := eval(combine(c, -1, worst.x))
		if err != nil {
			return nil, 0, err
		}
		switch {
		case r.f < best.f:
			e, err := eval(combine(c, -2, worst.x))
			if err != nil {
				return nil, 0, err
			}
			if e.f < r.f {
				simplex[n] = e
			} else {
				simplex[n] = r
			}
		case r.f < simplex[n-1].f:
			simplex[n] = r
		default:
			toward := worst
			if r.f < worst.f {
				toward = r
			}
			k, err := eval(combine(c, 0.5, toward.x))
			if err != nil {
				return nil, 0, err
			}
			if k.f < toward.f {
				simplex[n] = k
				continue
			}
			for j := 1; j <= n; j++ { // shrink toward the best
				v, err := eval(combine(best.x, 0.5, simplex[j].x))
				if err != nil {
					return nil, 0, err
				}
				simplex[j] = v
			}
		}
	}
	sort.SliceStable(simplex, func(a, b int) bool { return simplex[a].f < simplex[b].f })
	return simplex[0].x, simplex[0].f, nil
}

// start guesses the cost knobs from the measured figures, so that the
// search begins near the answer: a decode step is about the median ITL
// of the least loaded run, split between the fixed and the per-sequence
// cost; the prefill cost is what the median TTFT adds to it, per prompt
// token.
func (f *fitter) start() []float64 {
	itl, ttft, prompt := math.Inf(1), 0.0, 1.0
	for _, r := range f.runs {
		if r.figs.MedianITL > 0 && r.figs.MedianITL < itl {
			itl, ttft = r.figs.MedianITL, r.figs.MedianTTFT
			var lens []float64
			for _, q := range r.reqs {
				lens = append(lens, float64(len(q.Prompt)))
			}
			prompt = math.Max(1, orZero(stats.Median(lens)))
		}
	}
	if math.IsInf(itl, 1) {
		itl = 10
	}
	x := []float64{
		0.7 * itl, // step_fixed_ms
		1000 * math.Max(ttft-itl, 0.05*itl) / prompt, // prefill_token_us
		1000 * 0.3 * itl / 4,                         // seq_us: a few sequences
		1e6 * 0.05 * itl / math.Max(1, 4*prompt),     // context_token_ns
		0.5 * itl,                                    // frontend_ms
		0.1 * itl,                                    // frontend_serial_ms
	}
	lo, hi := bounds()
	for i := range x {
		x[i] = math.Max(lo[i], math.Min(hi[i], math.Log(math.Max(x[i], 1e-9))))
	}
	return x
}

// A fitResult is the optimiser's answer.
type fitResult struct {
	x     []float64
	loss  float64
	evals int
	// flat lists the directions (one knob, or a trade of knobs with
	// their signs) along which a ±25% move changes the loss by less than
	// 1%: the data do not pin them down.
	flat []string
	// atLower names the knobs at the search's lower bound: the data show
	// no such cost, and the profile says 0.
	atLower []string
}

// fit searches the cost knobs from two starts (the guess, and the guess
// with the whole step as a fixed cost), then restarts from the best
// point once, with at most maxEvals loss evaluations in all.
func (f *fitter) fit(ctx context.Context, maxEvals int) (fitResult, error) {
	evals0 := f.evals
	lo, hi := bounds()
	obj := f.objective(ctx)
	step := []float64{1, 1, 1.5, 2, 1.5, 1.5}
	x0 := f.start()
	x1 := slices.Clone(x0)
	x1[0] += math.Log(1.4)
	x1[2] -= 2
	best, bestF := []float64(nil), math.Inf(1)
	budget := max(maxEvals/3, 20)
	for _, s := range [][]float64{x0, x1} {
		x, v, err := nelderMead(obj, s, step, lo, hi, budget)
		if err != nil {
			return fitResult{}, err
		}
		if v < bestF {
			best, bestF = x, v
		}
	}
	x, v, err := nelderMead(obj, best, []float64{0.3, 0.3, 0.5, 0.7, 0.5, 0.5}, lo, hi, max(maxEvals-(f.evals-evals0), 10))
	if err != nil {
		return fitResult{}, err
	}
	if v < bestF {
		best, bestF = x, v
	}
	return f.analyse(ctx, best, bestF)
}

// refine searches again from x with small steps, for at most maxEvals
// more replays: after the jitter is known, so that the replays queue as
// a noisy server does (a deterministic one queues less at high load).
func (f *fitter) refine(ctx context.Context, x []float64, maxEvals int) (fitResult, error) {
	lo, hi := bounds()
	obj := f.objective(ctx)
	// The loss moved with the jitter: x's value is recomputed.
	v0, err := obj(x)
	if err != nil {
		return fitResult{}, err
	}
	y, v, err := nelderMead(obj, x, []float64{0.1, 0.1, 0.2, 0.3, 0.2, 0.2}, lo, hi, max(maxEvals, 10))
	if err != nil {
		return fitResult{}, err
	}
	if v > v0 {
		y, v = x, v0
	}
	return f.analyse(ctx, y, v)
}

// analyse says which knobs of the fit at best (loss bestF) the data do
// not pin down: at the lower bound, or flat (±25% moves the loss less
// than 1%).
func (f *fitter) analyse(ctx context.Context, best []float64, bestF float64) (fitResult, error) {
	lo, _ := bounds()
	obj := f.objective(ctx)
	out := fitResult{x: best, loss: bestF}
	var free []int // knobs off their bound
	for i, k := range costKnobs {
		if best[i] <= lo[i]+math.Log(1.5) {
			out.atLower = append(out.atLower, k.key)
			continue
		}
		free = append(free, i)
	}
	// The loss's curvature over the free knobs (central differences of a
	// ±25% step): a direction along which it hardly rises is one the data
	// do not pin down, an axis (one knob) or a trade between knobs.
	h := math.Log(1.25)
	at := func(d map[int]float64) (float64, error) {
		y := slices.Clone(best)
		for i, v := range d {
			y[i] += v
		}
		return obj(y)
	}
	n := len(free)
	hess := make([][]float64, n)
	for a := range hess {
		hess[a] = make([]float64, n)
	}
	for a, i := range free {
		up, err := at(map[int]float64{i: h})
		if err != nil {
			return fitResult{}, err
		}
		down, err := at(map[int]float64{i: -h})
		if err != nil {
			return fitResult{}, err
		}
		hess[a][a] = (up + down - 2*bestF) / (h * h)
		for b := a + 1; b < n; b++ {
			j := free[b]
			var c [4]float64
			for k, sg := range [4][2]float64{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}} {
				if c[k], err = at(map[int]float64{i: sg[0] * h, j: sg[1] * h}); err != nil {
					return fitResult{}, err
				}
			}
			hess[a][b] = (c[0] - c[1] - c[2] + c[3]) / (4 * h * h)
			hess[b][a] = hess[a][b]
		}
	}
	vals, vecs := eigenSym(hess)
	for e, lambda := range vals {
		if lambda*h*h/2 >= 0.01*bestF+1e-6 {
			continue
		}
		var names []string
		for a, i := range free {
			if math.Abs(vecs[a][e]) > 0.3 {
				sign := "+"
				if vecs[a][e]*vecs[argmaxAbs(vecs, e)][e] < 0 {
					sign = "−"
				}
				names = append(names, sign+costKnobs[i].key)
			}
		}
		if len(names) == 1 {
			names[0] = names[0][1:]
		}
		out.flat = append(out.flat, strings.Join(names, " "))
	}
	out.evals = f.evals
	return out, nil
}

// argmaxAbs is the row of column e of m with the largest magnitude.
func argmaxAbs(m [][]float64, e int) int {
	best := 0
	for r := range m {
		if math.Abs(m[r][e]) > math.Abs(m[best][e]) {
			best = r
		}
	}
	return best
}

// eigenSym returns the eigenvalues of the symmetric matrix a and the
// eigenvectors as the columns of a matrix (Jacobi rotations; a is small).
func eigenSym(a [][]float64) ([]float64, [][]float64) {
	n := len(a)
	m := make([][]float64, n)
	v := make([][]float64, n)
	for i := range m {
		m[i] = slices.Clone(a[i])
		v[i] = make([]float64, n)
		v[i][i] = 1
	}
	for range 100 {
		off := 0.0
		for i := range n {
			for j := i + 1; j < n; j++ {
				off += m[i][j] * m[i][j]
			}
		}
		if off < 1e-20 {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				if m[p][q] == 0 {
					continue
				}
				theta := (m[q][q] - m[p][p]) / (2 * m[p][q])
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				sn := t * c
				for k := range n { // columns p and q
					mkp, mkq := m[k][p], m[k][q]
					m[k][p], m[k][q] = c*mkp-sn*mkq, sn*mkp+c*mkq
				}
				for k := range n { // rows p and q
					mpk, mqk := m[p][k], m[q][k]
					m[p][k], m[q][k] = c*mpk-sn*mqk, sn*mpk+c*mqk
				}
				for k := range n {
					vkp, vkq := v[k][p], v[k][q]
					v[k][p], v[k][q] = c*vkp-sn*vkq, sn*vkp+c*vkq
				}
			}
		}
	}
	vals := make([]float64, n)
	for i := range n {
		vals[i] = m[i][i]
	}
	return vals, v
}

// jitter is the spread of the measured ITLs that the fitted replay does
// not explain, as a step's relative standard deviation, capped at the
// knob's maximum of 1. It includes the client's timing noise.
//
// Consecutive gaps of a request mostly come from steps of the same batch,
// so the log ratio of one gap to the one before is the steps' noise, but
// for the steps where the batch changed. jitter finds the knob's value
// whose replay gives that ratio the robust spread the measurement has
// (bisection: the spread grows with the knob), so that the batch changes
// count the same on both sides.
func (f *fitter) jitter(ctx context.Context, p sim.Params) (float64, error) {
	var meas []float64
	for _, run := range f.runs {
		for _, m := range run.meas {
			meas = appendSteps(meas, m.chunkAt)
		}
	}
	want := robustSD(meas)
	spread := func(j float64) (float64, error) {
		q := p
		q.Jitter = j
		var v []float64
		for i := range f.runs {
			_, _, pred, err := f.runLoss(ctx, &f.runs[i], q)
			if err != nil {
				return 0, err
			}
			for _, t := range pred {
				v = appendSteps(v, t)
			}
		}
		return robustSD(v), nil
	}
	lo, hi := 0.0, 0.5
	if s, err := spread(lo); err != nil || s >= want {
		return 0, err
	}
	for range 10 {
		mid := (lo + hi) / 2
		s, err := spread(mid)
		if err != nil {
			return 0, err
		}
		if s < want {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, nil
}

// appendSteps appends the log ratio of each gap between chunk times t to
// the gap before it.
func appendSteps(out, t []float64) []float64 {
	for k := 2; k < len(t); k++ {
		a, b := t[k-1]-t[k-2], t[k]-t[k-1]
		if a > 0 && b > 0 {
			out = append(out, math.Log(b/a))
		}
	}
	return out
}

// robustSD is 1.4826 times the median absolute deviation: a normal
// sample's standard deviation, untouched by a minority of outliers.
func robustSD(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	med := stats.Median(v)
	dev := make([]float64, len(v))
	for i, x := range v {
		dev[i] = math.Abs(x - med)
	}
	return 1.4826 * stats.Median(dev)
}
