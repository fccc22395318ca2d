package main

import (
	"context"
	"fmt"
	"io"
)

const gateUsage = `usage: servegate gate [flags]

Compare base and head benchmark results (benchstat format) and exit non-zero
when a gated metric regresses.
`

func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if wantsHelp(args) {
		fmt.Fprint(stdout, gateUsage)
		return 0
	}
	fmt.Fprintln(stderr, "servegate gate: not implemented yet (waiting for the gate branch)")
	return 1
}
