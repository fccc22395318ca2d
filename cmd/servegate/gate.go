package main

import (
	"context"
	"io"

	"github.com/servegate/servegate/internal/gate"
)

// runGate compares base and head results; its exit status is gate.Main's.
func runGate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if wantsHelp(args) {
		gate.Main(ctx, args, stdout, stdout)
		return 0
	}
	return gate.Main(ctx, args, stdout, stderr)
}
