package main

import (
	"context"
	"fmt"
	"io"

	"github.com/servegate/servegate/internal/sim"
)

const simUsage = `usage: servegate sim [flags]
       servegate sim calibrate --output PROFILE.yaml RESULT.json...   (experimental)
       servegate sim predict --profile FILE --scenario FILE [flags]   (experimental)

Run servegate's vLLM-compatible simulator: an OpenAI API server (vLLM v0.13
wire format) in front of a continuous-batching model that runs in real time,
for benchmarks with no GPU and no model. Flags override SERVEGATE_SIM_*
environment variables, which override the profile. 'servegate sim calibrate'
fits a profile to runs against a real server; 'servegate sim predict'
predicts a scenario's run against a profile in virtual time (see their
--help). Both are the twin's, which is experimental.

`

// twinExperimental heads the usage of each of the twin's subcommands
// until the twin meets its accuracy goal.
const twinExperimental = `Experimental: the twin misses its 10% accuracy goal on real vLLM
(docs/twin.md). Its predictions, flags and output may change.

`

// simCommands are the subcommands of servegate sim; any other first
// argument is a flag of the server.
var simCommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"calibrate": runCalibrate,
	"predict":   runSimPredict,
}

// runSim runs a sim subcommand, or the simulator server until ctx is done.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if cmd, ok := simCommands[args[0]]; ok {
			return cmd(ctx, args[1:], stdout, stderr)
		}
	}
	if wantsHelp(args) {
		fmt.Fprint(stdout, simUsage)
		sim.Main(ctx, args, stdout, stdout)
		return 0
	}
	return sim.Main(ctx, args, stdout, stderr)
}
