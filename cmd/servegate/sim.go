package main

import (
	"context"
	"fmt"
	"io"

	"github.com/servegate/servegate/containers/simulator"
)

const simUsage = `usage: servegate sim [flags]
       servegate sim predict --profile FILE --scenario FILE [flags]

Run servegate's vLLM-compatible simulator: an OpenAI API server (vLLM v0.13
wire format) in front of a continuous-batching model that runs in real time,
for benchmarks with no GPU and no model. Flags override SERVEGATE_SIM_*
environment variables, which override the profile. 'servegate sim predict'
predicts a scenario's run against a profile in virtual time (see its --help).

`

// runSim runs the simulator server until ctx is done, or sim predict.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "predict" {
		return runSimPredict(ctx, args[1:], stdout, stderr)
	}
	if wantsHelp(args) {
		fmt.Fprint(stdout, simUsage)
		simulator.Main(ctx, args, stdout, stdout)
		return 0
	}
	return simulator.Main(ctx, args, stdout, stderr)
}
