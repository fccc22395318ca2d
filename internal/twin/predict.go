package twin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/sim"
)

// ErrSessions is what Predict returns for a plan with sessions
// (multi-turn conversations): their turns wait for the answers of the
// ones before, which the replay does not model yet.
var ErrSessions = errors.New("virtual time: sessions not supported yet")

// TargetKind is the Target.Kind of a prediction. A predicted result's
// "target" metadata and benchfmt configuration say it, so a prediction is
// never read as (or gated against) a measurement.
const TargetKind = "virtual"

// Target is the target a prediction against profile p reports: no URL,
// no image, the profile's model.
func Target(p sim.Params) *pipeline.Target {
	return &pipeline.Target{Kind: TargetKind, Model: p.Model, ServedModelName: p.Model, CPUSet: TargetKind}
}

// Predict runs plan against the profile p in virtual time (sim.Replay)
// and returns the Outcome the real run would have had: the plan's
// samples (Prepare), sent on the benchmark engine's own arrival schedule
// (engine.Arrivals: the plan's rate, burstiness, ramp-up and seed, or its
// trace) under its concurrency limit, with their output lengths (exactly
// max_tokens with ignore_eos, else the profile's EOS draw), summarized by
// the same metrics.Summarize and judged by the same SLO checks.
//
// What a prediction leaves out: the network and the client (TTFT is the
// server's first token; a chunk carries the tokens of one step), the
// load generator's health (there is none: the plan's harness limits are
// dropped), the server's metrics, and the chat template's tokens (prompts
// are the dataset's text encoded with the plan's tokenizer). The
// readiness probe and the warm-ups (requests of the first sample) run
// before time zero, so they warm the prefix cache as they do for real.
// A request longer than the profile's max_model_len fails with HTTP 400,
// as the server answers it; one past the plan's request timeout fails as
// a timeout (the replay does not abort it). Plans with sessions return
// ErrSessions; pooling backends (embeddings, rerank) and capacity plans
// are refused too.
func Predict(ctx context.Context, plan *pipeline.Plan, p sim.Params) (*pipeline.Outcome, error) {
	if err := checkPredictable(plan); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("predict: profile: %w", err)
	}
	if err := plan.Prepare(ctx); err != nil {
		return nil, err
	}
	samples, tok := plan.Samples(), plan.LoadedTokenizer()
	if len(samples) == 0 || tok == nil {
		return nil, errors.New("predict: the plan prepared no samples")
	}
	cfg := plan.Engine
	offsets, sched, err := engine.Arrivals(cfg, samples)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	w := newPrediction(plan, p, offsets)
	warm := w.warmups(cfg)
	var t0 time.Duration // time zero of the run, after the warm-ups
	if len(warm) > 0 {
		res, err := sim.Replay(ctx, p, warm, sim.ReplayOptions{MaxConcurrency: cfg.MaxConcurrency})
		if err != nil {
			return nil, fmt.Errorf("predict: warm-ups: %w", err)
		}
		for _, r := range res {
			t0 = max(t0, r.Sent+lastTime(r.TokenTimes))
		}
	}
	all := make([]sim.VirtualRequest, 0, len(warm)+len(w.reqs))
	all = append(all, warm...)
	for _, r := range w.reqs {
		r.Arrival += t0
		all = append(all, r)
	}
	opt := sim.ReplayOptions{MaxConcurrency: cfg.MaxConcurrency}
	if cfg.MaxDuration > 0 {
		opt.MaxSimulated = t0 + cfg.MaxDuration
	}
	res, err := sim.Replay(ctx, p, all, opt)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	stopped := w.fill(res[len(warm):], t0, cfg)
	result := &engine.Result{
		Records: w.recs, Duration: w.duration(cfg, stopped), Start: time.Now(), Schedule: sched,
		Indices: seqIndices(len(samples)),
	}
	if stopped {
		result.Stopped = engine.ErrMaxDuration
	}
	return pipeline.NewOutcome(predictedPlan(plan), Target(p), result, nil), nil
}

// checkPredictable refuses the plans a replay cannot run.
func checkPredictable(plan *pipeline.Plan) error {
	switch {
	case plan.Sessions != nil:
		return ErrSessions
	case plan.Capacity != nil:
		return errors.New("virtual time: the plan is a capacity search; predict it with servegate capacity --virtual")
	case plan.Summary.Pooling:
		return fmt.Errorf("virtual time: pooling backends (%s) not supported", plan.Engine.Backend)
	case plan.Engine.Shard.Count > 1:
		return errors.New("virtual time: a shard of a run cannot be predicted alone; predict the whole run")
	}
	return nil
}

// predictedPlan is the plan a prediction reports: without harness limits
// (no load generator ran) or server metrics, and saying it is a
// prediction in the result's metadata.
func predictedPlan(plan *pipeline.Plan) *pipeline.Plan {
	pp := *plan
	pp.Harness = scenario.Harness{}
	pp.ServerMetrics.Off = true
	pp.Info.Metadata = append(slices.Clip(pp.Info.Metadata), [2]string{"prediction", "virtual time"})
	return &pp
}

// A prediction is a plan's samples as the replay's requests, and their
// records.
type prediction struct {
	p    sim.Params
	recs []metrics.Record     // one per sample
	reqs []sim.VirtualRequest // the samples the server would accept
	idx  []int                // the sample of each of reqs
	warm *sim.VirtualRequest  // the first sample, sent by the warm-ups
}

// newPrediction encodes each sample's prompt and sets its record's schedule.
// A sample the server would refuse (longer than max_model_len) gets a
// failed record and no request.
func newPrediction(plan *pipeline.Plan, p sim.Params, offsets []time.Duration) *prediction {
	samples, tok, cfg := plan.Samples(), plan.LoadedTokenizer(), plan.Engine
	w := &prediction{p: p, recs: make([]metrics.Record, len(samples))}
	prefix := cfg.RequestIDPrefix
	if prefix == "" {
		prefix = "virtual-"
	}
	for i, s := range samples {
		id := s.RequestID
		if id == "" {
			id = prefix + strconv.Itoa(i)
		}
		ids := tok.Encode(s.Prompt, true)
		mt := s.OutputLen
		if mt <= 0 {
			mt = p.DefaultMaxTokens
		}
		w.recs[i] = metrics.Record{RequestID: id, Scheduled: offsets[i], Dispatched: offsets[i], Free: offsets[i], PromptLen: s.PromptLen}
		r := sim.VirtualRequest{Arrival: offsets[i], Prompt: ids, MaxTokens: mt, ID: id, EOS: !cfg.IgnoreEOS}
		if i == 0 {
			w.warm = &r
		}
		if len(ids) == 0 || len(ids)+mt > p.MaxModelLen {
			rec := &w.recs[i]
			rec.Start, rec.HTTPStatus, rec.Failure = offsets[i], 400, metrics.FailureHTTPStatus
			rec.Error = fmt.Sprintf("HTTP 400: prompt (%d tokens) plus max_tokens (%d) is over the profile's max_model_len %d", len(ids), mt, p.MaxModelLen)
			continue
		}
		w.reqs = append(w.reqs, r)
		w.idx = append(w.idx, i)
	}
	return w
}

// warmups are the requests sent before time zero: the readiness probe
// (when the plan waits for the server) and the warm-ups, all of the first
// sample, at once under the concurrency limit.
func (w *prediction) warmups(cfg engine.Config) []sim.VirtualRequest {
	n := cfg.NumWarmups
	if cfg.ReadyTimeout > 0 {
		n++
	}
	if w.warm == nil || len(w.warm.Prompt) == 0 || len(w.warm.Prompt)+w.warm.MaxTokens > w.p.MaxModelLen {
		return nil // the server refuses it: no warm-up computes anything
	}
	out := make([]sim.VirtualRequest, n)
	for k := range out {
		out[k] = *w.warm
		out[k].Arrival, out[k].ID = 0, "warmup-"+strconv.Itoa(k)
	}
	return out
}

// fill writes the records of the replayed requests (res, sent t0 after
// the replay's start) and reports whether the run's maximum duration cut
// any short.
func (w *prediction) fill(res []sim.VirtualResult, t0 time.Duration, cfg engine.Config) (stopped bool) {
	for k, r := range res {
		rec := &w.recs[w.idx[k]]
		if r.Unsent {
			rec.Unsent, rec.Failure, rec.Error = true, metrics.FailureCanceled, "not sent: run stopped before its scheduled time"
			stopped = true
			continue
		}
		rec.Start = r.Sent - t0
		rec.Free = rec.Start // a virtual client is never late
		rec.ServerPromptTokens = len(w.reqs[k].Prompt)
		if r.FinishReason == "" {
			rec.Failure, rec.Error = metrics.FailureCanceled, "run stopped: maximum duration reached (virtual time)"
			stopped = true
			continue
		}
		setTokens(rec, r.TokenTimes)
		rec.FinishReason, rec.HTTPStatus = r.FinishReason, 200
		rec.Success = true
		if cfg.RequestTimeout > 0 && rec.Latency > cfg.RequestTimeout {
			rec.Success, rec.Failure = false, metrics.FailureTimeout
			rec.Error = fmt.Sprintf("request timed out after %v (virtual time)", cfg.RequestTimeout)
		}
	}
	return stopped
}

// setTokens sets a record's TTFT, ITLs, latency and token counts from
// its token times (from its start). Tokens of one step share a time and
// go out in one chunk, as the server streams them; ChunkTokens is set
// when a chunk carries more than one (speculative decoding).
func setTokens(rec *metrics.Record, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	rec.TTFT, rec.Latency, rec.OutputTokens = times[0], lastTime(times), len(times)
	rec.FirstContent, rec.ContentTokens = rec.TTFT, len(times)
	chunks := []int{1}
	for i := 1; i < len(times); i++ {
		if times[i] == times[i-1] {
			chunks[len(chunks)-1]++
			continue
		}
		rec.ITL = append(rec.ITL, times[i]-times[i-1])
		chunks = append(chunks, 1)
	}
	if len(chunks) < len(times) {
		rec.ChunkTokens = chunks
	}
}

// duration is vLLM's benchmark duration: from time zero to the end of the
// last request, or the maximum duration when that cut the run.
func (w *prediction) duration(cfg engine.Config, stopped bool) time.Duration {
	if stopped && cfg.MaxDuration > 0 {
		return cfg.MaxDuration
	}
	var d time.Duration
	for i := range w.recs {
		r := &w.recs[i]
		if !r.Unsent {
			d = max(d, r.Start+r.Latency)
		}
	}
	return d
}

func lastTime(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	return ts[len(ts)-1]
}

func seqIndices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
