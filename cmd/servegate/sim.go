package main

import (
	"context"
	"fmt"
	"io"

	"github.com/servegate/servegate/containers/simulator"
)

const simUsage = `usage: servegate sim [flags]
       servegate sim calibrate --output PROFILE.yaml RESULT.json...

Run servegate's vLLM-compatible simulator: an OpenAI API server (vLLM v0.13
wire format) in front of a continuous-batching model that runs in real time,
for benchmarks with no GPU and no model. Flags override SERVEGATE_SIM_*
environment variables, which override the profile. 'servegate sim calibrate'
fits a profile to runs against a real server (see its --help).

`

// runSim runs the simulator server until ctx is done, or one of its
// subcommands.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "calibrate" {
		return runCalibrate(ctx, args[1:], stdout, stderr)
	}
	if wantsHelp(args) {
		fmt.Fprint(stdout, simUsage)
		simulator.Main(ctx, args, stdout, stdout)
		return 0
	}
	return simulator.Main(ctx, args, stdout, stderr)
}
