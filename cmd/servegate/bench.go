package main

import (
	"context"
	"fmt"
	"io"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
)

const benchSummary = `Benchmark online serving throughput: a drop-in for 'vllm bench serve'.
Flags, defaults, validation, the console report and result files are
vLLM's; servegate adds --scenario, --target, --report, --progress,
--no-plot, --warm-connections, --request-timeout-sec and --max-duration-sec.`

// parseBench parses and validates the bench command line. With
// --scenario the scenario supplies the model and the other keys, so only
// the flags given are checked against one another.
func parseBench(args []string) (*benchArgs, *benchPlan, *argParser, error) {
	a := &benchArgs{}
	p := newBenchParser(a)
	if err := p.parse(args); err != nil {
		return nil, nil, p, err
	}
	if a.Scenario == nil {
		if err := p.checkRequired(); err != nil {
			return nil, nil, p, err
		}
	}
	fp, err := validateBench(a, p)
	if err != nil {
		return nil, nil, p, err
	}
	return a, fp, p, nil
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate bench"
	if wantsHelp(args) {
		a := &benchArgs{}
		newBenchParser(a).writeHelp(stdout, benchSummary)
		return 0
	}
	a, fp, p, err := parseBench(args)
	if err != nil {
		return exitCode(prog, err, stderr)
	}
	r := &benchRun{args: a, flags: fp, parser: p, stdout: stdout, stderr: stderr}
	if a.Scenario == nil {
		r.plan = flagsPlan(a, fp, stderr)
		return interrupted(ctx, exitCode(prog, r.execute(ctx), stderr), stderr)
	}
	plans, err := scenarioPlans(*a.Scenario, a, fp, p)
	if err != nil {
		return exitCode(prog, err, stderr)
	}
	// Every scenario of the file runs; the status is the worst one.
	code := 0
	for _, plan := range plans {
		fmt.Fprintf(stdout, "=== scenario %s (%s)\n", plan.Name, *a.Scenario)
		r.plan = plan
		code = max(code, exitCode(prog, r.execute(ctx), stderr))
		if ctx.Err() != nil {
			break
		}
	}
	return interrupted(ctx, code, stderr)
}

// exitInterrupted is the status after SIGINT or SIGTERM (128 + SIGINT),
// whatever the partial run measured.
const exitInterrupted = 130

// interrupted turns code into exitInterrupted when ctx was canceled by a
// signal: what was measured has been written, and said to be partial.
func interrupted(ctx context.Context, code int, stderr io.Writer) int {
	if ctx.Err() == nil {
		return code
	}
	fmt.Fprintln(stderr, "servegate bench: interrupted")
	return exitInterrupted
}

// scenarioPlans loads a scenario file and plans each scenario: the
// environment overrides CI uses (SERVEGATE_TARGET, ...) first, then the
// flags given explicitly.
func scenarioPlans(path string, a *benchArgs, fp *benchPlan, p *argParser) ([]*pipeline.Plan, error) {
	scs, err := scenario.LoadFile(path)
	if err != nil {
		return nil, err
	}
	env := scenario.EnvFromOS()
	var plans []*pipeline.Plan
	for _, sc := range scs {
		over, err := sc.Override(env)
		if err != nil {
			return nil, overrideError(sc.Name, err)
		}
		if sc.Capacity != nil {
			return nil, fmt.Errorf("scenario %s has a capacity block: run it with servegate capacity --scenario %s", sc.Name, path)
		}
		plan, err := scenarioPlan(over, a, fp, p)
		if err != nil {
			return nil, err
		}
		plans = append(plans, plan)
	}
	return plans, nil
}

// wantsHelp reports whether args ask for help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help":
			return true
		}
	}
	return false
}
