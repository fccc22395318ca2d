package main

import (
	"context"
	"errors"
	"io"
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
	if a.Scenario == nil {
		if err := p.checkRequired(); err != nil {
			return nil, nil, p, err
		}
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
	a, plan, _, err := parseBench(args)
	if err != nil {
		return exitCode(prog, err, stderr)
	}
	return exitCode(prog, executeBench(ctx, a, plan, stdout, stderr), stderr)
}

func executeBench(ctx context.Context, a *benchArgs, plan *benchPlan, stdout, stderr io.Writer) error {
	return errors.New("run benchmark: not implemented yet (waiting for the engine branch)")
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
