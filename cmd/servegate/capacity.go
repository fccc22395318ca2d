package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/capacity"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/twin"
)

const capacityUsage = `usage: servegate capacity --scenario FILE [flags]

Find the highest request rate at which every SLO of a scenario holds
(goodput_ratio included): double the rate from the minimum until a step
fails, then bisect between the last pass and the first fail, within a
precision and a time budget. Each step is a full run of the scenario at one
rate, warm-ups included. Between the last pass and the first fail, the SLOs'
edge is interpolated from the two steps' margins (how far inside their
tightest bound they stayed); --benchfmt's max-rate-req/s is that edge.
The scenario's capacity block sets the defaults; a scenario without one is
searched with the built-in defaults.

With --virtual no server starts: each step is predicted in virtual time
against a simulator profile (as servegate sim predict does), so the search
takes seconds: --profile FILE, or without it the scenario's own simulator
(a sim or inproc target's profile and args). The result is a prediction of
that profile's capacity, marked target "virtual". Scenarios with sessions
are not supported yet. --virtual is experimental: the twin misses its 10%
accuracy goal on real vLLM (docs/twin.md).

Exit status: 0 when a rate holds every SLO, 1 when none does, 2 for bad
flags or an invalid run.

flags:
`

// capacityArgs are the flags of servegate capacity.
type capacityArgs struct {
	scenario, name, target, baseURL string
	minRate, maxRate, precision     float64
	budget, stepDuration            time.Duration
	result, benchfmt, report        string
	count                           int
	virtual                         bool
	profile                         string
}

func parseCapacity(args []string, out io.Writer) (*capacityArgs, *flag.FlagSet, error) {
	a := &capacityArgs{}
	fs := flag.NewFlagSet("servegate capacity", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&a.scenario, "scenario", "", "scenario `file` (required)")
	fs.StringVar(&a.name, "name", "", "the scenario of the file to search (default: the only one, or each with a capacity block)")
	fs.StringVar(&a.target, "target", "", "override target.kind: sim, inproc, vllm or url")
	fs.StringVar(&a.baseURL, "base-url", "", "the url target's base URL (selects --target url)")
	fs.Float64Var(&a.minRate, "min-rate", 0, "first rate tried, req/s (default: capacity.min_rate)")
	fs.Float64Var(&a.maxRate, "max-rate", 0, "highest rate tried, req/s (default: capacity.max_rate)")
	fs.Float64Var(&a.precision, "precision", 0, "stop when fail - pass <= precision * pass (default: capacity.precision)")
	fs.DurationVar(&a.budget, "budget", 0, "time limit of one search (default: capacity.budget)")
	fs.DurationVar(&a.stepDuration, "step-duration", 0, "send rate x this many requests per step (default: capacity.step_duration)")
	fs.StringVar(&a.result, "result", "", "write the result JSON (the run at the highest passing rate, max_goodput_rate and the steps) to this `file`")
	fs.StringVar(&a.benchfmt, "benchfmt", "", "append a max-rate-req/s benchfmt line per search to this `file`")
	fs.StringVar(&a.report, "report", "", "write a self-contained HTML report (the steps against their rate, and the run at the highest passing rate) to this `file`")
	fs.IntVar(&a.count, "count", 1, "run the search this many times (one benchfmt line each)")
	fs.BoolVar(&a.virtual, "virtual", false, "experimental: predict each step in virtual time against --profile instead of running a server")
	fs.StringVar(&a.profile, "profile", "", "with --virtual, the simulator profile: a shipped name or a YAML `file` (default: the scenario's own simulator)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), capacityUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case a.scenario == "":
		return nil, fs, errors.New("--scenario is required")
	case a.count < 1:
		return nil, fs, fmt.Errorf("--count must be at least 1, got %d", a.count)
	case a.minRate < 0 || a.maxRate < 0 || a.precision < 0 || a.budget < 0 || a.stepDuration < 0:
		return nil, fs, errors.New("--min-rate, --max-rate, --precision, --budget and --step-duration must not be negative")
	case !a.virtual && a.profile != "":
		return nil, fs, errors.New("--profile is only for --virtual (a real search takes its server from the scenario's target)")
	case a.virtual && (a.target != "" || a.baseURL != ""):
		return nil, fs, errors.New("--virtual predicts a profile without a server: --target and --base-url do not apply")
	}
	return a, fs, nil
}

func runCapacity(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate capacity"
	if wantsHelp(args) {
		_, fs, _ := parseCapacity(nil, stdout)
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	}
	a, _, err := parseCapacity(args, io.Discard)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see --help)\n", prog, err)
		return 2
	}
	scs, err := capacityScenarios(a)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	code := 0
	for _, sc := range scs {
		var profile *virtualProfile
		if a.virtual {
			if profile, err = virtualProfileOf(a.profile, sc); err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", prog, err)
				return 2
			}
		}
		code = max(code, capacityScenario(ctx, a, sc, profile, stdout, stderr))
	}
	return code
}

// capacityScenarios loads the file, picks the scenarios to search, applies
// the environment and the target flags, and the capacity flags on top of
// each scenario's capacity block (or the defaults).
func capacityScenarios(a *capacityArgs) ([]*scenario.Scenario, error) {
	all, err := scenario.LoadFile(a.scenario)
	if err != nil {
		return nil, err
	}
	var picked []*scenario.Scenario
	for _, sc := range all {
		if a.name == sc.Name || (a.name == "" && (len(all) == 1 || sc.Capacity != nil)) {
			picked = append(picked, sc)
		}
	}
	if len(picked) == 0 {
		if a.name != "" {
			return nil, fmt.Errorf("%s has no scenario %q", a.scenario, a.name)
		}
		return nil, fmt.Errorf("%s: no scenario has a capacity block; name one with --name", a.scenario)
	}
	env := scenario.EnvFromOS()
	if a.target != "" {
		env.Target = a.target
	}
	if a.baseURL != "" {
		env.URL = a.baseURL
	}
	out := make([]*scenario.Scenario, 0, len(picked))
	for _, sc := range picked {
		over, err := sc.Override(env)
		if err != nil {
			return nil, overrideError(sc.Name, err)
		}
		if len(over.SLO.Bounds) == 0 {
			return nil, fmt.Errorf("scenario %s: no slo.bounds; the capacity is the highest rate at which they all hold", sc.Name)
		}
		c := scenario.Capacity{MinRate: scenario.DefaultCapacityMinRate, MaxRate: scenario.DefaultCapacityMaxRate,
			Precision: scenario.DefaultCapacityPrecision, Budget: scenario.Duration(scenario.DefaultCapacityBudget)}
		if over.Capacity != nil {
			c = *over.Capacity
		}
		setF := func(dst *float64, v float64) {
			if v > 0 {
				*dst = v
			}
		}
		setF(&c.MinRate, a.minRate)
		setF(&c.MaxRate, a.maxRate)
		setF(&c.Precision, a.precision)
		if a.budget > 0 {
			c.Budget = scenario.Duration(a.budget)
		}
		if a.stepDuration > 0 {
			c.StepDuration = scenario.Duration(a.stepDuration)
		}
		if c.MaxRate < c.MinRate || c.Precision >= 1 {
			return nil, fmt.Errorf("scenario %s: want min rate <= max rate and precision < 1, got %v, %v, %v", sc.Name, c.MinRate, c.MaxRate, c.Precision)
		}
		if c.MaxRate > scenario.MaxCapacityRate || c.Budget.D() > engine.MaxTimeout || c.StepDuration.D() > engine.MaxTimeout {
			return nil, fmt.Errorf("scenario %s: --max-rate is at most %v req/s, --budget and --step-duration at most %v", sc.Name, scenario.MaxCapacityRate, engine.MaxTimeout)
		}
		over.Capacity = &c
		out = append(out, over)
	}
	return out, nil
}

// capacityScenario searches one scenario --count times and writes what was
// asked for: against its target, or with profile (--virtual) in virtual
// time.
func capacityScenario(ctx context.Context, a *capacityArgs, sc *scenario.Scenario, profile *virtualProfile, stdout, stderr io.Writer) int {
	plan := pipeline.NewPlan(sc)
	if err := plan.Prepare(ctx); err != nil {
		fmt.Fprintf(stderr, "servegate capacity: %v\n", err)
		return 2
	}
	hooks := pipeline.CapacityHooks{Step: func(st capacity.Step, _ *pipeline.Outcome) {
		v := "FAIL"
		if st.Pass {
			v = "PASS"
		}
		fmt.Fprintf(stdout, "step %s req/s: %s\n", metrics.PyFloat(st.Rate), v)
	}}
	var tgt *pipeline.Target
	if profile != nil {
		p := profile.params
		plan.Info.Metadata = append(plan.Info.Metadata, [2]string{"profile", profile.name})
		tgt = twin.Target(p)
		hooks.Execute = func(ctx context.Context, step *pipeline.Plan) (*pipeline.Outcome, error) {
			return twin.Predict(ctx, step, p)
		}
		fmt.Fprintf(stdout, "=== predicted capacity of scenario %s on profile %s, in virtual time (no server ran)\n", sc.Name, profile.name)
	} else {
		var err error
		if tgt, err = pipeline.StartTarget(ctx, plan.Target, stderr); err != nil {
			fmt.Fprintf(stderr, "servegate capacity: %v\n", err)
			return 2
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := tgt.Close(sctx); err != nil {
				fmt.Fprintf(stderr, "stop %s target: %v\n", tgt.Kind, err)
			}
		}()
		fmt.Fprintf(stdout, "=== capacity of scenario %s on %s target %s (%s)\n", sc.Name, tgt.Kind, tgt.BaseURL, tgt.Model)
	}
	code := 0
	for range a.count {
		// The budget is checked before each step; a step that overruns it
		// is cut two minutes later.
		sctx, cancel := context.WithTimeout(ctx, plan.Capacity.Budget.D()+2*time.Minute)
		cs, err := pipeline.SearchCapacity(sctx, plan, tgt, hooks)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "servegate capacity: scenario %s: %v\n", sc.Name, err)
			return 2
		}
		for _, w := range cs.Warnings {
			fmt.Fprintf(stderr, "warning: %v\n", w)
		}
		if err := report.WriteCapacityTable(stdout, cs.Result); err != nil {
			return 2
		}
		if err := writeCapacity(a, cs); err != nil {
			fmt.Fprintf(stderr, "servegate capacity: %v\n", err)
			return 2
		}
		if !cs.Verdict().Pass {
			code = 1
		}
		if cs.Result.Stopped == capacity.StoppedCanceled {
			return 2
		}
	}
	return code
}

// writeCapacity writes the result JSON (the last search's) and appends the
// benchfmt line.
func writeCapacity(a *capacityArgs, cs *pipeline.CapacitySearch) error {
	if a.result != "" {
		if err := metrics.WriteResult(a.result, cs.ResultJSON(true), false); err != nil {
			return err
		}
	}
	if a.report != "" {
		if err := writeHTMLFile(a.report, capacityHTML(cs)); err != nil {
			return err
		}
	}
	if a.benchfmt == "" {
		return nil
	}
	f, err := os.OpenFile(a.benchfmt, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("benchfmt: %w", err)
	}
	w := report.NewBenchfmtWriter(f)
	werr := w.WriteBenchfmtResult("Capacity/scenario="+cs.Plan.Name, 1, cs.BenchConfig(), cs.BenchMetrics())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// capacityHTML is the HTML report of a search: the steps against their rate
// and, when a rate passed, the run at the highest one.
func capacityHTML(cs *pipeline.CapacitySearch) report.HTMLReport {
	p := cs.Plan
	rep := report.HTMLReport{
		Title:    fmt.Sprintf("servegate capacity: scenario %s, %s on %s", p.Name, cs.Target.Model, cs.Target.Kind),
		Capacity: cs.Result,
		Settings: []report.ReportSetting{
			{Name: "target", Value: cs.Target.Kind}, {Name: "base URL", Value: cs.Target.BaseURL},
			{Name: "model", Value: cs.Target.Model}, {Name: "scenario", Value: p.Name},
			{Name: "capacity", Value: report.CapacityLine(cs.Result)},
		},
	}
	if o := cs.Best; o != nil {
		rep.Generated = o.Result.Start.Add(o.Result.Duration)
		rep.Records, rep.SLOs, rep.Server = o.Result.Records, o.Verdicts, o.ServerSeries()
		rep.Summary = report.ConsoleSummary{
			Values: o.Summary, Pooling: p.Summary.Pooling, RequestRate: o.Plan.Engine.RequestRate,
			MaxConcurrency: p.Engine.MaxConcurrency, Goodput: len(p.Summary.Goodput) > 0 && !p.Summary.Pooling,
			PercentileMetrics: p.Summary.PercentileMetrics, Percentiles: p.Summary.Percentiles,
		}
		rep.Settings = append(rep.Settings, report.ReportSetting{Name: "run shown", Value: "the step at " + metrics.PyFloat(o.Plan.Engine.RequestRate) + " req/s"})
	}
	return rep
}
