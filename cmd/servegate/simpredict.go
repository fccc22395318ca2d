package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/sim"
	"github.com/servegate/servegate/internal/twin"
)

const simPredictUsage = `usage: servegate sim predict --scenario FILE [--profile FILE] [flags]

` + twinExperimental + `Predict a scenario's run against a simulator profile in virtual time: the
simulator's engine runs the scenario's requests (its dataset, arrival
schedule, concurrency limit and output lengths) on a simulated clock, with
no server and no sleeping, and the benchmark's own summary reads the
result, so the block below reads like servegate bench's. It is a
prediction: no network, no client, no load generator. Without --profile
the scenario's own simulator (a sim or inproc target's profile and args) is
predicted. Scenarios with sessions are not supported yet.

Exit status: 0 when the predicted run meets the scenario's SLOs, 1 when it
does not, 2 for bad flags or input.

flags:
`

// simPredictArgs are the flags of servegate sim predict.
type simPredictArgs struct {
	profile, scenario, name, result string
	detailed                        bool
}

func parseSimPredict(args []string, out io.Writer) (*simPredictArgs, *flag.FlagSet, error) {
	a := &simPredictArgs{}
	fs := flag.NewFlagSet("servegate sim predict", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&a.profile, "profile", "", "simulator profile: a shipped name or a YAML `file` (default: the scenario's own simulator)")
	fs.StringVar(&a.scenario, "scenario", "", "scenario `file` (required)")
	fs.StringVar(&a.name, "name", "", "the scenario of the file to predict (default: the only one)")
	fs.StringVar(&a.result, "result-filename", "", "write the predicted result JSON to this `file`")
	fs.BoolVar(&a.detailed, "save-detailed", false, "with --result-filename, add the per-request detail")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), simPredictUsage)
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
	case a.detailed && a.result == "":
		return nil, fs, errors.New("--save-detailed needs --result-filename")
	}
	return a, fs, nil
}

// runSimPredict is servegate sim predict.
func runSimPredict(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate sim predict"
	if wantsHelp(args) {
		_, fs, _ := parseSimPredict(nil, stdout)
		fs.Usage()
		return 0
	}
	a, _, err := parseSimPredict(args, io.Discard)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see --help)\n", prog, err)
		return 2
	}
	sc, err := predictScenario(a)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	vp, err := virtualProfileOf(a.profile, sc)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	plan := pipeline.NewPlan(sc)
	plan.Info.Metadata = append(plan.Info.Metadata, [2]string{"profile", vp.name})
	t0 := time.Now()
	o, err := twin.Predict(ctx, plan, vp.params)
	if err != nil {
		fmt.Fprintf(stderr, "%s: scenario %s: %v\n", prog, sc.Name, err)
		return 2
	}
	fmt.Fprintf(stdout, "Prediction in virtual time: scenario %s on profile %s (no server ran: %.1f simulated s in %.2f wall s)\n",
		sc.Name, vp.name, o.Result.Duration.Seconds(), time.Since(t0).Seconds())
	return writePrediction(a, o, stdout, stderr)
}

// A virtualProfile is the simulator profile a prediction runs, and how
// the output names it.
type virtualProfile struct {
	name   string
	params sim.Params
}

// virtualProfileOf loads and checks the profile a prediction of sc runs:
// the named one, or without a name the scenario's own simulator (its
// target's profile and args).
func virtualProfileOf(name string, sc *scenario.Scenario) (*virtualProfile, error) {
	if name == "" {
		p, err := pipeline.SimParams(sc.Target)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w; give --profile", sc.Name, err)
		}
		return &virtualProfile{name: fmt.Sprintf("of its %s target (%s with its args)", sc.Target.Kind, cmp.Or(sc.Target.Profile, "default")), params: p}, nil
	}
	p, err := sim.LoadProfile(name)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	return &virtualProfile{name: name, params: p}, nil
}

// predictScenario loads the file, picks the scenario and applies the
// environment's overrides. A capacity scenario is a search, not a run.
func predictScenario(a *simPredictArgs) (*scenario.Scenario, error) {
	all, err := scenario.LoadFile(a.scenario)
	if err != nil {
		return nil, err
	}
	var sc *scenario.Scenario
	for _, s := range all {
		if s.Name == a.name || (a.name == "" && len(all) == 1) {
			sc = s
		}
	}
	if sc == nil {
		if a.name != "" {
			return nil, fmt.Errorf("%s has no scenario %q", a.scenario, a.name)
		}
		return nil, fmt.Errorf("%s holds %d scenarios; name one with --name", a.scenario, len(all))
	}
	over, err := sc.Override(scenario.EnvFromOS())
	if err != nil {
		return nil, overrideError(sc.Name, err)
	}
	if over.Capacity != nil {
		return nil, fmt.Errorf("scenario %s has a capacity block: predict its capacity with servegate capacity --virtual --scenario %s", sc.Name, a.scenario)
	}
	return over, nil
}

// writePrediction prints the console block and the predicted SLOs, and
// writes the result file; exit 1 when a predicted SLO fails.
func writePrediction(a *simPredictArgs, o *pipeline.Outcome, stdout, stderr io.Writer) int {
	plan := o.Plan
	console := report.ConsoleSummary{
		Values: o.Summary, Pooling: plan.Summary.Pooling, RequestRate: plan.Engine.RequestRate,
		MaxConcurrency: plan.Engine.MaxConcurrency, Goodput: len(plan.Summary.Goodput) > 0,
		PercentileMetrics: plan.Summary.PercentileMetrics, Percentiles: plan.Summary.Percentiles,
	}
	if err := report.WriteConsoleSummary(stdout, console); err != nil {
		fmt.Fprintf(stderr, "servegate sim predict: %v\n", err)
		return 2
	}
	if a.result != "" {
		if err := metrics.WriteResult(a.result, o.ResultJSON(o.RunInfo(), a.detailed), false); err != nil {
			fmt.Fprintf(stderr, "servegate sim predict: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "Saved prediction: %s\n", a.result)
	}
	if len(o.Verdicts) == 0 {
		return 0
	}
	fmt.Fprintf(stdout, "Predicted SLOs of scenario %s:\n", plan.Name)
	if err := report.WriteSLOTable(stdout, o.Verdicts); err != nil {
		return 2
	}
	if msg := report.SLOFailure(o.Verdicts); msg != "" {
		fmt.Fprintf(stderr, "servegate sim predict: scenario %s: predicted SLO not met: %s\n", plan.Name, msg)
		return 1
	}
	return 0
}
