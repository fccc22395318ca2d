package main

import (
	"context"
	"fmt"
	"io"
)

const simUsage = `usage: servegate sim [flags]

Run servegate's vLLM-compatible simulator: an OpenAI API server that streams
tokens with configurable latency, for benchmarks with no GPU and no model.
`

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if wantsHelp(args) {
		fmt.Fprint(stdout, simUsage)
		return 0
	}
	fmt.Fprintln(stderr, "servegate sim: not implemented yet (waiting for the simulator branch)")
	return 1
}
