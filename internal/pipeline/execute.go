package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/cpuset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/servermetrics"
	"github.com/servegate/servegate/internal/store"
)

// Hooks let a front door watch a run without owning any of it.
type Hooks struct {
	// Progress is called as requests finish: done of total.
	Progress func(done, total int)
	// Starting is called once the dataset is ready and the target is up,
	// just before the engine starts (`servegate bench` prints vLLM's
	// traffic lines there).
	Starting func(samples int)
	// Rerun is called with an invalid outcome that Execute runs again
	// (Plan.Harness.Reruns) and does not return, so that a front door can
	// keep its result and say so.
	Rerun func(o *Outcome)
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
	// Verdicts are the SLO checks, in the order of Plan.SLO.Bounds. They
	// say nothing about the server when the run is invalid (Invalid).
	Verdicts []scenario.Verdict
	// Health are the checks of the load generator's health, in the order
	// of Plan.Harness.Bounds; any failure makes the run invalid.
	Health []scenario.Verdict
	// Server is what the server's metrics said, nil when the plan does not
	// scrape them. Its problems (and the checks it allows) are in
	// Result.Warnings.
	Server *servermetrics.Summary
	// PrefixCache says whether the server's prefix cache was emptied
	// before the run; nil when no reset was tried (a prediction).
	PrefixCache *PrefixCacheReset
	// Pair is the pair label of a paired run (SERVEGATE_PAIR), written
	// as the benchfmt configuration key pair:; "" otherwise.
	Pair string

	lookup func(string) (float64, bool)
}

// Execute runs plan against tgt: the dataset (prepared once), the engine,
// the summary, the harness health and the SLO verdicts. An invalid run
// (the load generator fell behind) is run again, up to
// Plan.Harness.Reruns times, and hooks.Rerun sees each one that was; the
// last outcome is returned, valid or not. A run the engine stopped early
// still returns its Outcome, with Result.Stopped saying why.
func Execute(ctx context.Context, plan *Plan, tgt *Target, hooks Hooks) (*Outcome, error) {
	if err := checkStartAt(plan); err != nil {
		return nil, err
	}
	if err := plan.Prepare(ctx); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		o, err := executeOnce(ctx, plan, tgt, hooks)
		if err != nil || o.Invalid() == "" || attempt >= plan.Harness.Reruns || ctx.Err() != nil {
			return o, err
		}
		if hooks.Rerun != nil {
			hooks.Rerun(o)
		}
	}
}

// executeOnce runs a prepared plan once.
func executeOnce(ctx context.Context, plan *Plan, tgt *Target, hooks Hooks) (*Outcome, error) {
	cfg := plan.Engine
	cfg.BaseURL = tgt.BaseURL
	cfg.Model = tgt.Model
	cfg.ModelName = tgt.ServedModelName
	cfg.Tokenizer = plan.tok
	cfg.Progress = hooks.Progress
	if hooks.Starting != nil {
		hooks.Starting(max(len(plan.samples), len(plan.convs)))
	}
	reset := resetPrefixCache(ctx, tgt, plan.Engine.Headers)
	rec := startServerMetrics(ctx, plan, tgt)
	if rec != nil {
		cfg.Started = func() { rec.Start(ctx) }
	}
	var res *engine.Result
	var err error
	if plan.Sessions != nil {
		cfg.RequestRate, cfg.NumWarmups, cfg.MaxConcurrency = 0, 0, 0
		res, err = engine.RunSessions(ctx, cfg, plan.engineSessions())
	} else {
		res, err = engine.Run(ctx, cfg, plan.samples)
	}
	var server *servermetrics.Summary
	if rec != nil {
		server = stopServerMetrics(ctx, rec)
	}
	if err != nil {
		if plan.Name != "" {
			return nil, fmt.Errorf("scenario %s: %w", plan.Name, err)
		}
		return nil, err
	}
	return newOutcome(plan, tgt, res, server, reset), nil
}

// NewOutcome judges a finished run of plan against tgt: vLLM's summary of
// res's records, the harness health and the SLO verdicts, with the
// server's metrics when server is not nil (their warnings join
// res.Warnings). Execute makes every Outcome with it; a prediction in
// virtual time (internal/twin) makes its own from simulated records, so
// that a prediction and a measurement are read the same way.
func NewOutcome(plan *Plan, tgt *Target, res *engine.Result, server *servermetrics.Summary) *Outcome {
	return newOutcome(plan, tgt, res, server, nil)
}

// newOutcome is NewOutcome with the run's prefix-cache reset.
func newOutcome(plan *Plan, tgt *Target, res *engine.Result, server *servermetrics.Summary, reset *PrefixCacheReset) *Outcome {
	sum := metrics.Summarize(res.Records, res.Duration, plan.Summary)
	sum.Health = res.Health
	o := &Outcome{Plan: plan, Target: tgt, Result: res, Summary: sum, Server: server, PrefixCache: reset}
	if err := reset.warning(); err != nil {
		res.Warnings = append(res.Warnings, err)
	}
	o.lookup = scenario.WithDerived(measured(sum))
	if server != nil {
		o.lookup = serverLookup(o.lookup, server)
		res.Warnings = append(res.Warnings, serverWarnings(o)...)
	}
	o.Health = plan.Harness.Check(o.lookup)
	o.Verdicts = plan.SLO.Check(o.lookup)
	return o
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
		if servedMeasure(name) {
			return 0, false
		}
		return sum.Value(name)
	}
}

// Invalid says why the run is invalid, the failed harness limits such as
// "p99_lateness_ms = 812.5, want <= 50", or "" for a valid run.
func (o *Outcome) Invalid() string {
	return report.SLOFailure(o.Health)
}

// InvalidError is the error of an invalid run: the load generator fell
// behind, so the numbers say nothing about the server.
func (o *Outcome) InvalidError() error {
	why := o.Invalid()
	if why == "" {
		return nil
	}
	return &InvalidRunError{Scenario: o.Plan.Name, Reason: why}
}

// An InvalidRunError says that a run is invalid: the load generator fell
// behind (Reason names the harness limits it broke), so its numbers say
// nothing about the server and its SLOs were not judged.
type InvalidRunError struct {
	// Scenario is the scenario's name ("" for a plain run).
	Scenario string
	// Reason lists the broken limits.
	Reason string
}

func (e *InvalidRunError) Error() string {
	msg := store.Refusal(false, e.Reason) +
		"; the numbers say nothing about the server, its SLOs were not judged (free CPU for the load generator, or raise the scenario's harness limits)"
	if e.Scenario != "" {
		return "scenario " + e.Scenario + ": " + msg
	}
	return msg
}

// HealthLine says in one line how the load generator fared, such as
// "load generator: lateness p99 0.21 ms (mean 0.05), CPU 4% of 2 CPUs,
// scheduling p99 0.10 ms, run-queue wait 0.01 s/s, GC pauses 0.30 ms,
// load average 1.52".
func (o *Outcome) HealthLine() string {
	v := func(name string) string {
		x, ok := o.lookup(name)
		if !ok {
			return "?"
		}
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	cpu := "?"
	if x, ok := o.lookup(metrics.ClientCPURatio); ok {
		cpu = strconv.FormatFloat(100*x, 'f', 0, 64) + "%"
	}
	return fmt.Sprintf("load generator: lateness p99 %s ms (mean %s), CPU %s of %s CPUs, scheduling p99 %s ms, run-queue wait %s s/s, GC pauses %s ms, load average %s",
		v("p99_lateness_ms"), v("mean_lateness_ms"), cpu, strings.TrimSuffix(v(metrics.ClientCPUs), ".00"), v(metrics.SchedLatencyP99MS),
		v(metrics.RunQueueWaitRatio), v(metrics.GCPauseMS), v(metrics.LoadAvg1m))
}

// Table is the run's SLO table: the harness limits, then the SLOs.
func (o *Outcome) Table() []scenario.Verdict {
	return append(o.Health[:len(o.Health):len(o.Health)], o.Verdicts...)
}

// servedMeasure reports whether a summary value measures the server's
// answers (latency, throughput, goodput) rather than counting requests or
// describing the load generator.
func servedMeasure(name string) bool {
	for _, m := range []string{"_ttft_", "_tpot_", "_itl_", "_e2el_", "throughput", "goodput", "max_output_tokens_per_s", "_session_duration_"} {
		if strings.Contains(name, m) {
			return true
		}
	}
	return false
}

// RunInfo is the result JSON's header: the plan's (Plan.RunInfo), with
// the run's date (its end, when vLLM takes it), ramp-up events, model, why
// the run is invalid and, for scenario runs, the target's kind, image and
// CPU set.
func (o *Outcome) RunInfo() metrics.RunInfo {
	info := o.Plan.RunInfo()
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
	info.Invalid = o.Invalid()
	if info.Extras {
		info.Metadata = append(info.Metadata[:len(info.Metadata):len(info.Metadata)],
			[2]string{"target", o.Target.Kind}, [2]string{"image", o.Target.Image}, [2]string{"cpuset", o.CPUSet()})
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

// ResultJSON renders vLLM's result JSON, with per-request detail when
// detailed, and the server's metrics (the raw scrapes too when detailed)
// after all of vLLM's keys. With info.Extras it adds the prefix cache
// reset.
func (o *Outcome) ResultJSON(info metrics.RunInfo, detailed bool) []byte {
	if o.Server != nil {
		info.Appendix = append(serverFields(o.Server, o.Target.ServeArgs, o.Result.Start, detailed), info.Appendix...)
	}
	// A plain `servegate bench` run keeps vLLM's keys: the reset is one
	// of servegate's extras.
	if o.PrefixCache != nil && info.Extras {
		info.Appendix = append([]metrics.Field{o.PrefixCache.field()}, info.Appendix...)
	}
	return o.Summary.ResultJSON(info, detailed)
}

// BenchConfig is the benchfmt file configuration of a run: what must be
// equal for two results to be comparable, and "invalid" with the reason
// when the run is invalid (the key is absent from a valid run's result).
func (o *Outcome) BenchConfig() []report.BenchConfig {
	cfg := benchConfig(o.Plan, o.Target)
	if o.PrefixCache != nil {
		cfg = append(cfg, o.PrefixCache.benchConfig())
	}
	if why := o.Invalid(); why != "" {
		cfg = append(cfg, report.Invalid(why))
	}
	if o.Interrupted() {
		cfg = append(cfg, report.Interrupted())
	}
	if o.Pair != "" {
		cfg = append(cfg, report.BenchConfig{Key: "pair", Value: o.Pair})
	}
	return cfg
}

// benchConfig is the benchfmt file configuration of plan on tgt.
func benchConfig(p *Plan, tgt *Target) []report.BenchConfig {
	return []report.BenchConfig{
		{Key: "model", Value: tgt.Model},
		{Key: "target", Value: tgt.Kind},
		{Key: "image", Value: tgt.Image},
		{Key: "backend", Value: p.Engine.Backend},
		{Key: "endpoint", Value: p.Engine.Endpoint},
		{Key: "dataset", Value: p.Dataset.Name},
		{Key: "scenario-sha", Value: p.SHA},
		{Key: "cpuset", Value: cpuSet(tgt)},
	}
}

// CPUSet says how the target and the load generator shared the CPUs:
// Target.CPUSet, "shared" when the target did not say.
func (o *Outcome) CPUSet() string { return cpuSet(o.Target) }

func cpuSet(tgt *Target) string { return cmp.Or(tgt.CPUSet, cpuset.Shared) }

// BenchMetrics are the run's values in benchstat units: the server's,
// its metrics' (server-*) and the harness health figures last.
func (o *Outcome) BenchMetrics() []report.BenchMetric {
	ms := report.BenchMetrics(o.lookup, o.Plan.Summary.Percentiles)
	// An all-failed run carries no served measure.
	if o.Server != nil && o.Summary.Completed > 0 {
		ms = append(ms, report.ServerBenchMetrics(o.Server.Value)...)
	}
	return append(ms, report.HealthMetrics(o.lookup)...)
}

// Value returns a summary value by its SLO metric name (derived ones
// included), as the SLO checks read it.
func (o *Outcome) Value(metric string) (float64, bool) { return o.lookup(metric) }

// RunContext bounds a run: the plan's max duration plus a margin for the
// dataset and the readiness check, else no limit but the caller's.
func RunContext(ctx context.Context, p *Plan) (context.Context, context.CancelFunc) {
	if d := p.Engine.MaxDuration; d > 0 {
		return context.WithTimeout(ctx, d+p.Engine.ReadyTimeout+time.Minute)
	}
	return context.WithCancel(ctx)
}
