package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/capacity"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
)

// capacitySteps numbers the steps of every search of the process, so that
// each step (of repeated searches too) sends prompts of its own.
var capacitySteps atomic.Int64

// minStepPrompts is the fewest requests a step of a capacity search sends
// when Capacity.StepDuration sizes the steps.
const minStepPrompts = 20

// A CapacitySearch is the outcome of a capacity search (Plan.Capacity): the
// search's result and the run at the highest rate that passed.
type CapacitySearch struct {
	// Plan is the plan searched.
	Plan *Plan
	// Target is the server it ran against.
	Target *Target
	// Result is the search: the highest passing rate and every step.
	Result *capacity.Result
	// Best is the step run at Result.MaxRate; nil when no rate passed.
	Best *Outcome
	// Warnings are the steps' warnings, each naming its step.
	Warnings []error
}

// CapacityHooks let a front door watch a search.
type CapacityHooks struct {
	// Step is called after each step with its outcome.
	Step func(st capacity.Step, o *Outcome)
	// Execute, when set, runs each step's plan instead of Execute against
	// the target: `servegate capacity --virtual` predicts every step in
	// virtual time (twin.Predict). The search is the same.
	Execute func(ctx context.Context, step *Plan) (*Outcome, error)
}

// SearchCapacity runs the capacity search of plan against tgt. Each step is a
// full Execute of the plan at one rate (warm-ups included; or
// hooks.Execute's run of it, such as a prediction) with fresh
// prompts (the dataset seed moves by one per step of the process, so that
// the prefix cache of earlier steps and searches does not make later ones
// faster); with Capacity.StepDuration the step sends rate × StepDuration
// requests. A step passes when every SLO bound holds and the run was not
// cut short. The failure that ends the bracketing is run twice
// (capacity.Search.Confirm): one stall there would halve the result.
func SearchCapacity(ctx context.Context, plan *Plan, tgt *Target, hooks CapacityHooks) (*CapacitySearch, error) {
	c := plan.Capacity
	if c == nil {
		return nil, errors.New("capacity search: the plan has no capacity block")
	}
	if len(plan.SLO.Bounds) == 0 {
		return nil, errors.New("capacity search: no SLO bounds to hold")
	}
	cs := &CapacitySearch{Plan: plan, Target: tgt}
	search := capacity.Search{MinRate: c.MinRate, MaxRate: c.MaxRate, Precision: c.Precision, Budget: c.Budget.D(), Confirm: true}
	n := 0
	probe := func(ctx context.Context, rate float64) (capacity.Step, error) {
		step := plan.stepPlan(rate, int(capacitySteps.Add(1)))
		n++
		t0 := time.Now()
		var o *Outcome
		var err error
		if hooks.Execute != nil {
			o, err = hooks.Execute(ctx, step)
		} else {
			o, err = Execute(ctx, step, tgt, Hooks{})
		}
		if err != nil {
			return capacity.Step{}, err
		}
		st := stepOf(o)
		st.Duration = time.Since(t0)
		for _, w := range o.Result.Warnings {
			if n > 1 && errors.Is(w, ErrPrefixCacheWarm) {
				continue // the earlier steps' warm-up prompts, said once
			}
			cs.Warnings = append(cs.Warnings, fmt.Errorf("step at %s req/s: %w", metrics.PyFloat(rate), w))
		}
		if st.Pass && (cs.Best == nil || rate > cs.Best.Plan.Engine.RequestRate) {
			cs.Best = o
		}
		if hooks.Step != nil {
			hooks.Step(st, o)
		}
		return st, nil
	}
	res, err := search.Run(ctx, probe)
	cs.Result = res
	if err != nil {
		return cs, err
	}
	return cs, nil
}

// stepPlan is the plan of step i at rate: the search's plan at a fixed
// rate, with a dataset seed of its own.
func (p *Plan) stepPlan(rate float64, i int) *Plan {
	s := *p
	s.Capacity = nil
	s.samples, s.tok = nil, nil
	s.Engine.RequestRate = rate
	s.Dataset.Seed = p.Dataset.Seed + int64(i)
	if d := p.Capacity.StepDuration.D(); d > 0 {
		n := int(math.Ceil(rate * d.Seconds()))
		if p.Dataset.NumPrompts > 0 {
			n = min(n, p.Dataset.NumPrompts)
		}
		n = max(n, minStepPrompts)
		s.Dataset.NumPrompts, s.Info.NumPrompts = n, n
	}
	return &s
}

// stepOf is the search's view of one run.
func stepOf(o *Outcome) capacity.Step {
	st := capacity.Step{Rate: o.Plan.Engine.RequestRate, Pass: o.Result.Stopped == nil, Goodput: math.NaN(), P99TTFT: math.NaN(), Margin: math.Inf(1)}
	if v, ok := o.Value("request_goodput"); ok && len(o.Plan.Summary.Goodput) > 0 {
		st.Goodput = v
	}
	if v, ok := o.Value("p99_ttft_ms"); ok {
		st.P99TTFT = v
	}
	for _, v := range o.Verdicts {
		m := v.Margin()
		if gm, ok := goodputMargin(v.Bound, o.Plan.Summary.Goodput, o.Result.Records); ok {
			m = gm
		}
		if !v.Harness && (math.IsNaN(m) || m < st.Margin) {
			st.Margin = m
		}
		if !v.Pass {
			st.Pass = false
			st.Failed = append(st.Failed, v.Bound.String())
		}
	}
	if o.Result.Stopped != nil {
		st.Failed = append(st.Failed, "run stopped early: "+o.Result.Stopped.Error())
		st.Margin = math.NaN()
	}
	return st
}

// ResultJSON renders the result JSON of the search: the run at the
// highest passing rate (vLLM's keys and servegate's), then
// max_goodput_rate, the search's verdict and the table of steps. When no
// rate passed there is no run to show, and the file holds the search
// alone.
func (cs *CapacitySearch) ResultJSON(detailed bool) []byte {
	r := cs.Result
	steps := make([]any, len(r.Steps))
	for i, st := range r.Steps {
		steps[i] = []metrics.Field{
			{Key: "rate", Value: st.Rate}, {Key: "pass", Value: st.Pass},
			{Key: "request_goodput", Value: nanNil(st.Goodput)}, {Key: "p99_ttft_ms", Value: nanNil(st.P99TTFT)},
			{Key: "margin", Value: finiteOrNil(st.Margin)},
			{Key: "duration_s", Value: st.Duration.Seconds()}, {Key: "failed_bounds", Value: append([]string{}, st.Failed...)},
		}
	}
	minFail := any(r.MinFailRate)
	if math.IsInf(r.MinFailRate, 1) {
		minFail = nil
	}
	app := []metrics.Field{
		{Key: "max_goodput_rate", Value: r.MaxRate},
		{Key: "capacity", Value: []metrics.Field{
			{Key: "min_fail_rate", Value: minFail}, {Key: "crossing_rate", Value: r.Crossing}, {Key: "converged", Value: r.Converged},
			{Key: "stopped", Value: nilIfEmpty(r.Stopped)}, {Key: "elapsed_s", Value: r.Elapsed.Seconds()},
			{Key: "steps", Value: steps},
		}},
	}
	if cs.Best == nil {
		return metrics.FieldsJSON(app)
	}
	info := cs.Best.RunInfo()
	info.Appendix = append(info.Appendix, app...)
	return cs.Best.ResultJSON(info, detailed)
}

func nanNil(v float64) any {
	if math.IsNaN(v) {
		return nil
	}
	return v
}

// finiteOrNil is v, or nil (JSON null) for NaN and ±Inf.
func finiteOrNil(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// BenchMetrics are the search's values in benchstat units: max-rate-req/s
// (better=higher) alone, the SLOs' edge interpolated between the
// bracketing steps (capacity.Result.Crossing). The highest passing rate
// moves in jumps of the bracket's width, as wide as a gate's tolerance;
// the crossing does not. The best run's latencies are left out: they sit
// at the SLO's edge at a rate that moves from search to search, so a gate
// on them would compare unlike runs.
func (cs *CapacitySearch) BenchMetrics() []report.BenchMetric {
	return []report.BenchMetric{{Unit: "max-rate-req/s", Value: cs.Result.Crossing, Better: report.Higher}}
}

// BenchConfig is the benchfmt configuration of the search: the plan's,
// as Outcome.BenchConfig says it, marked interrupted when the search was
// canceled (the gate refuses such a result).
func (cs *CapacitySearch) BenchConfig() []report.BenchConfig {
	cfg := benchConfig(cs.Plan, cs.Target)
	if cs.Result.Stopped == capacity.StoppedCanceled {
		cfg = append(cfg, report.Interrupted())
	}
	return cfg
}

// Verdict says whether the search found a rate that holds the SLOs, as an
// SLO verdict: max_goodput_rate > 0.
func (cs *CapacitySearch) Verdict() scenario.Verdict {
	b := scenario.Bound{Metric: "max_goodput_rate", Op: ">", Value: 0}
	return scenario.Verdict{Bound: b, Measured: cs.Result.MaxRate, Found: true, Pass: b.Holds(cs.Result.MaxRate)}
}
