package benchtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/servegate/servegate/benchtest/engine"
	"github.com/servegate/servegate/benchtest/metrics"
	"github.com/servegate/servegate/benchtest/report"
	"github.com/servegate/servegate/benchtest/scenario"
)

// Hooks let a front door watch a run without owning any of it.
type Hooks struct {
	// Progress is called as requests finish: done of total.
	Progress func(done, total int)
	// Starting is called once the dataset is ready and the target is up,
	// just before the engine starts (`servegate bench` prints vLLM's
	// traffic lines there).
	Starting func(samples int)
}

// An Outcome is what one execution of a Plan produced.
type Outcome struct {
	// Plan is the plan that ran.
	Plan *Plan
	// Target is the server it ran against.
	Target *Target
	// Result is the engine's result: records, duration, warnings.
	Result *engine.Result
	// Summary is vLLM's summary of the records.
	Summary *metrics.Summary
	// Verdicts are the SLO checks, in the order of Plan.SLO.Bounds.
	Verdicts []scenario.Verdict

	lookup func(string) (float64, bool)
}

// Execute runs plan once against tgt: the dataset (prepared once), the
// engine, the summary and the SLO verdicts. A run the engine stopped early
// still returns its Outcome, with Result.Stopped saying why.
func Execute(ctx context.Context, plan *Plan, tgt *Target, hooks Hooks) (*Outcome, error) {
	if err := checkStartAt(plan); err != nil {
		return nil, err
	}
	if err := plan.Prepare(ctx); err != nil {
		return nil, err
	}
	cfg := plan.Engine
	cfg.BaseURL = tgt.BaseURL
	cfg.Model = tgt.Model
	cfg.ModelName = tgt.ServedModelName
	cfg.Tokenizer = plan.tok
	cfg.Progress = hooks.Progress
	if hooks.Starting != nil {
		hooks.Starting(len(plan.samples))
	}
	res, err := engine.Run(ctx, cfg, plan.samples)
	if err != nil {
		if plan.Name != "" {
			return nil, fmt.Errorf("scenario %s: %w", plan.Name, err)
		}
		return nil, err
	}
	sum := metrics.Summarize(res.Records, res.Duration, plan.Summary)
	o := &Outcome{Plan: plan, Target: tgt, Result: res, Summary: sum}
	o.lookup = scenario.WithDerived(measured(sum))
	o.Verdicts = plan.SLO.Check(o.lookup)
	return o, nil
}

// measured looks up the summary's values for SLO checks and benchfmt. A
// run with no successful request measured no latency, throughput or
// goodput (the summary holds zeros there), so only its counts are found:
// a bound such as p99_ttft_ms <= 500 then reads MISSING and fails instead
// of passing on a 0.
func measured(sum *metrics.Summary) func(string) (float64, bool) {
	if sum.Completed > 0 {
		return sum.Value
	}
	return func(name string) (float64, bool) {
		switch name {
		case "completed", "failed", "failure_ratio", "duration":
			return sum.Value(name)
		}
		return 0, false
	}
}

// RunInfo is the result JSON's header: the plan's, with the run's date
// (its end, when vLLM takes it), ramp-up events, model and, for scenario
// runs, the target's kind and image.
func (o *Outcome) RunInfo() metrics.RunInfo {
	info := o.Plan.Info
	info.Date = o.Result.Start.Add(o.Result.Duration).Format("20060102-150405")
	info.RPSChanges = o.Result.RPSChanges
	info.ModelID = cmp.Or(info.ModelID, o.Target.Model)
	if o.Interrupted() {
		info.Interrupted, info.InterruptedBy = true, o.Result.Stopped.Error()
		for _, r := range o.Result.Records {
			if r.Unsent {
				info.Unsent++
			}
		}
	}
	if info.Extras {
		info.Metadata = append(info.Metadata[:len(info.Metadata):len(info.Metadata)],
			[2]string{"target", o.Target.Kind}, [2]string{"image", o.Target.Image})
	}
	info.Metadata = append(info.Metadata[:len(info.Metadata):len(info.Metadata)], shardInfo(o)...)
	return info
}

// Interrupted reports whether the run was cut short (a signal, the
// test's end or timeout) rather than ending by itself or at its maximum
// duration. Its numbers describe part of a run: the gate refuses them.
func (o *Outcome) Interrupted() bool {
	return o.Result.Stopped != nil && !errors.Is(o.Result.Stopped, engine.ErrMaxDuration)
}

// ResultJSON renders vLLM's result JSON with per-request detail.
func (o *Outcome) ResultJSON(info metrics.RunInfo, detailed bool) []byte {
	return o.Summary.ResultJSON(info, detailed)
}

// BenchConfig is the benchfmt file configuration of a run: what must be
// equal for two results to be comparable.
func (o *Outcome) BenchConfig() []report.BenchConfig {
	p := o.Plan
	cfg := []report.BenchConfig{
		{Key: "model", Value: o.Target.Model},
		{Key: "target", Value: o.Target.Kind},
		{Key: "image", Value: o.Target.Image},
		{Key: "backend", Value: p.Engine.Backend},
		{Key: "endpoint", Value: p.Engine.Endpoint},
		{Key: "dataset", Value: p.Dataset.Name},
		{Key: "scenario-sha", Value: p.SHA},
	}
	if o.Interrupted() {
		cfg = append(cfg, report.Interrupted())
	}
	return cfg
}

// BenchMetrics are the run's values in benchstat units.
func (o *Outcome) BenchMetrics() []report.BenchMetric {
	return report.BenchMetrics(o.lookup, o.Plan.Summary.Percentiles)
}

// Value returns a summary value by its SLO metric name (derived ones
// included), as the SLO checks read it.
func (o *Outcome) Value(metric string) (float64, bool) { return o.lookup(metric) }

// runContext bounds a run: the plan's max duration plus a margin for the
// dataset and the readiness check, else no limit but the caller's.
func runContext(ctx context.Context, p *Plan) (context.Context, context.CancelFunc) {
	if d := p.Engine.MaxDuration; d > 0 {
		return context.WithTimeout(ctx, d+p.Engine.ReadyTimeout+time.Minute)
	}
	return context.WithCancel(ctx)
}
