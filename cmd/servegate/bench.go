package main

import (
	"context"
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
	a, plan, p, err := parseBench(args)
	if err != nil {
		return exitCode(prog, err, stderr)
	}
	r := &benchRun{args: a, plan: plan, parser: p, stdout: stdout, stderr: stderr}
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
