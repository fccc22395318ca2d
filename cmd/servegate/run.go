package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/report"
)

// A benchRun is one execution of servegate bench: the Plan, the flags
// that only say where output goes, and the writers.
type benchRun struct {
	args   *benchArgs
	flags  *benchPlan
	parser *argParser
	plan   *pipeline.Plan
	stdout io.Writer
	stderr io.Writer
	// now is the clock of the result's date; the run's end when nil.
	now func() time.Time
}

// execute runs the plan with benchtest's executor: dataset first (a bad
// one fails before any container starts), then the target, the engine
// with the progress bar, and the console block, result files, HTML report
// and SLO verdicts.
func (r *benchRun) execute(ctx context.Context) error {
	if err := r.plan.Prepare(ctx); err != nil {
		return err
	}
	tgt, err := pipeline.StartTarget(ctx, r.plan.Target, r.stderr)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := tgt.Close(sctx); err != nil {
			fmt.Fprintf(r.stderr, "stop %s target: %v\n", tgt.Kind, err)
		}
	}()
	if tgt.Kind != "url" {
		fmt.Fprintf(r.stdout, "Started %s target at %s\n", tgt.Kind, redact.String(tgt.BaseURL))
	}
	o, err := r.drive(ctx, tgt)
	if err != nil {
		return err
	}
	return r.output(o)
}

// drive executes the plan, with vLLM's traffic lines and the progress bar.
func (r *benchRun) drive(ctx context.Context, tgt *pipeline.Target) (*pipeline.Outcome, error) {
	a := r.args
	var bar *report.ProgressBar
	hooks := pipeline.Hooks{Starting: func(n int) {
		r.printTraffic()
		if !a.DisableTqdm && (a.Progress || report.IsTerminal(r.stderr)) {
			bar = report.NewProgressBar(r.stderr, n)
			bar.Plain = !report.IsTerminal(r.stderr)
		}
	}}
	hooks.Progress = func(done, total int) {
		if bar != nil {
			bar.Update(done, total)
		}
	}
	hooks.Rerun = func(o *pipeline.Outcome) {
		if bar != nil {
			bar.Finish()
		}
		fmt.Fprintf(r.stderr, "warning: %v; running it again (harness.reruns %d)\n", o.InvalidError(), o.Plan.Harness.Reruns)
	}
	o, err := pipeline.Execute(ctx, r.plan, tgt, hooks)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return nil, err
	}
	for _, w := range o.Result.Warnings {
		fmt.Fprintf(r.stderr, "warning: %v\n", w)
	}
	if o.Interrupted() {
		info := o.RunInfo()
		fmt.Fprintf(r.stderr, "warning: run interrupted (%v): %d requests never sent; the results below are partial\n", o.Result.Stopped, info.Unsent)
	} else if o.Result.Stopped != nil {
		fmt.Fprintf(r.stderr, "warning: run stopped early: %v\n", o.Result.Stopped)
	}
	return o, nil
}

// output writes everything asked for: plots, the console block, result
// files, the HTML report and SLO verdicts.
func (r *benchRun) output(o *pipeline.Outcome) error {
	a, plan, sum := r.args, r.plan, o.Summary
	if sum.Completed == 0 {
		fmt.Fprintln(r.stderr, "warning: All requests failed. This is likely due to a misconfiguration on the benchmark arguments.")
	}
	if !a.NoPlot && !plan.Summary.Pooling {
		if err := report.WriteThroughputPlots(r.stdout, o.Result.Records); err != nil {
			return err
		}
	}
	console := r.consoleSummary(sum)
	if err := report.WriteConsoleSummary(r.stdout, console); err != nil {
		return err
	}
	info := o.RunInfo()
	if r.now != nil {
		info.Date = r.now().Format("20060102-150405")
	}
	if a.SaveResult || a.AppendResult {
		if err := r.saveResult(o, info); err != nil {
			return err
		}
	}
	if a.Report != nil {
		if err := r.writeHTMLReport(*a.Report, o, console, info); err != nil {
			return err
		}
		fmt.Fprintf(r.stdout, "HTML report: %s\n", *a.Report)
	}
	return r.checkSLOs(o)
}

// checkSLOs prints the scenario's SLO table (harness limits first) and
// fails when the run is invalid (a *pipeline.InvalidRunError, exit 2) or
// a bound broke.
func (r *benchRun) checkSLOs(o *pipeline.Outcome) error {
	if len(o.Health) > 0 {
		fmt.Fprintln(r.stdout, o.HealthLine())
	}
	if len(o.Table()) == 0 {
		return nil
	}
	fmt.Fprintf(r.stdout, "SLOs of scenario %s:\n", r.plan.Name)
	if err := report.WriteSLOTable(r.stdout, o.Table()); err != nil {
		return err
	}
	if err := o.InvalidError(); err != nil {
		return err
	}
	if msg := report.SLOFailure(o.Verdicts); msg != "" {
		return fmt.Errorf("scenario %s: SLO not met: %s", r.plan.Name, msg)
	}
	return nil
}

// printTraffic prints the lines vLLM prints before the main run.
func (r *benchRun) printTraffic() {
	e, w := r.plan.Engine, r.stdout
	if e.ReadyTimeout <= 0 {
		fmt.Fprintln(w, "Skipping endpoint ready check.")
	}
	if e.NumWarmups > 0 {
		fmt.Fprintf(w, "Warming up with %d requests...\n", e.NumWarmups)
	}
	fmt.Fprintln(w, "Starting main benchmark run...")
	if ru := e.RampUp; ru != nil {
		fmt.Fprintf(w, "Traffic ramp-up strategy: %s.\n", ru.Strategy)
		fmt.Fprintf(w, "Will increase RPS from %d to %d RPS over the duration of the benchmark.\n", int(ru.StartRPS), int(ru.EndRPS))
	} else {
		fmt.Fprintf(w, "Traffic request rate: %s\n", metrics.PyFloat(e.RequestRate))
	}
	dist := "Gamma distribution"
	if e.Burstiness == 1 {
		dist = "Poisson process"
	}
	fmt.Fprintf(w, "Burstiness factor: %s (%s)\n", metrics.PyFloat(e.Burstiness), dist)
	conc := "None"
	if e.MaxConcurrency > 0 {
		conc = fmt.Sprint(e.MaxConcurrency)
	}
	fmt.Fprintf(w, "Maximum request concurrency: %s\n", conc)
}

func (r *benchRun) consoleSummary(sum *metrics.Summary) report.ConsoleSummary {
	p := r.plan
	return report.ConsoleSummary{
		Values:            sum,
		Pooling:           p.Summary.Pooling,
		RequestRate:       p.Engine.RequestRate,
		MaxConcurrency:    p.Engine.MaxConcurrency,
		Goodput:           len(p.Summary.Goodput) > 0 && !p.Summary.Pooling,
		PercentileMetrics: p.Summary.PercentileMetrics,
		Percentiles:       p.Summary.Percentiles,
	}
}
