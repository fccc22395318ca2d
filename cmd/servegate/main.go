// Command servegate benchmarks LLM servers and gates regressions.
//
//	servegate bench ...    a drop-in for `vllm bench serve` (same flags and report)
//	servegate sim ...      the vLLM-compatible simulator server (sim calibrate: a twin, experimental)
//	servegate capacity ... find the highest request rate that meets a scenario's SLOs
//	servegate compare ...  gate a pull request: base and head in pairs, then the verdict
//	servegate gate ...     compare benchmark results and fail on regressions
//	servegate report ...   summarise a saved detailed result again
//	servegate merge ...    merge the detailed results of a sharded run
//	servegate history ...  keep results per commit, draw them, export them
//	servegate comment ...  the pull request comment and the job status
//
// Run `servegate <command> --help` for each command's flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/servegate/servegate/internal/pipeline"
)

const usage = `servegate benchmarks LLM serving and gates performance regressions.

usage: servegate <command> [flags]

commands:
  bench    benchmark a server: a drop-in for 'vllm bench serve' (same flags,
           same console report), plus --scenario, --target, --report
  sim      run the vLLM-compatible simulator server; 'sim calibrate' fits a
           simulator profile (a twin, experimental) to runs against a
           real server
  capacity find the highest request rate at which a scenario's SLOs hold
  compare  gate a pull request: BASE and HEAD (default: the working tree)
           run each scenario in pairs until the verdict ends
  gate     compare base and head benchmark results; fail on a regression
  report   summarise a saved detailed result again (console, plots, HTML)
  merge    merge the shards' detailed results of one run (bench --shard)
  history  keep results per runner type and commit (add, prune), write the
           dashboard (site), export for Bencher or Apache Otava (export)
  comment  put the verdict on a pull request as one comment (post), print
           the job's status from the gate's exit code (status)

Run 'servegate <command> --help' for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one servegate command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "sim":
		return runSim(ctx, args[1:], stdout, stderr)
	case "capacity":
		return runCapacity(ctx, args[1:], stdout, stderr)
	case "sweep":
		// The command's old name. Its flags are unchanged.
		fmt.Fprintln(stderr, "servegate: sweep is now called capacity: run servegate capacity with the same flags")
		return 2
	case "compare":
		return runCompare(ctx, args[1:], stdout, stderr)
	case "gate":
		return runGate(ctx, args[1:], stdout, stderr)
	case "report":
		return runReport(ctx, args[1:], stdout, stderr)
	case "merge":
		return runMerge(ctx, args[1:], stdout, stderr)
	case "history":
		return runHistory(ctx, args[1:], stdout, stderr)
	case "comment":
		return runComment(ctx, args[1:], os.Getenv, stdout, stderr)
	}
	fmt.Fprintf(stderr, "servegate: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// exitCode prints err the way argparse does for usage errors (status 2),
// and as a plain error otherwise: status 2 for an invalid run (the load
// generator fell behind), 1 for anything else.
func exitCode(prog string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "usage: %s [options]\n%s: error: %s\n", prog, prog, ue.msg)
		return 2
	}
	var ie *pipeline.InvalidRunError
	if errors.As(err, &ie) {
		// Fail closed: the run cannot tell anything about the server.
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	return 1
}
