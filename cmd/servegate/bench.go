package main

import (
	"context"
	"fmt"
	"io"

	"github.com/servegate/servegate/benchtest/scenario"
)

const benchSummary = `Benchmark online serving throughput: a drop-in for 'vllm bench serve'.
Flags, defaults, validation, the console report and result files are
vLLM's; servegate adds --scenario, --target, --report, --progress and
--no-plot.`

// parseBench parses and validates the bench command line.
func parseBench(args []string) (*benchArgs, *benchPlan, *argParser, error) {
	a := &benchArgs{}
	p := newBenchParser(a)
	if err := p.parse(args); err != nil {
		return nil, nil, p, err
	}
	if err := p.checkRequired(); err != nil {
		return nil, nil, p, err
	}
	plan, err := validateBench(a, p)
	if err != nil {
		return nil, nil, p, err
	}
	return a, plan, p, nil
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate bench"
	if wantsHelp(args) {
		a := &benchArgs{}
		newBenchParser(a).writeHelp(stdout, benchSummary)
		return 0
	}
	path, ok := scenarioFlag(args)
	if !ok {
		a, plan, p, err := parseBench(args)
		if err != nil {
			return exitCode(prog, err, stderr)
		}
		r := &benchRun{args: a, plan: plan, parser: p, stdout: stdout, stderr: stderr}
		return exitCode(prog, r.execute(ctx), stderr)
	}
	scs, err := loadScenarios(path)
	if err != nil {
		return exitCode(prog, err, stderr)
	}
	// Every scenario of the file runs; the status is the worst one.
	code := 0
	for _, sc := range scs {
		fmt.Fprintf(stdout, "=== scenario %s (%s)\n", sc.Name, path)
		code = max(code, runScenario(ctx, prog, sc, args, stdout, stderr))
	}
	return code
}

// runScenario runs one scenario; explicit flags override its keys.
func runScenario(ctx context.Context, prog string, sc *scenario.Scenario, args []string, stdout, stderr io.Writer) int {
	base, err := scenarioArgs(sc)
	if err != nil {
		return exitCode(prog, err, stderr)
	}
	a, plan, p, err := parseBench(append(base, args...))
	if err != nil {
		return exitCode(prog, err, stderr)
	}
	r := &benchRun{args: a, plan: plan, parser: p, stdout: stdout, stderr: stderr, scenario: sc}
	return exitCode(prog, r.execute(ctx), stderr)
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
