package main

import (
	"context"
	"io"

	"github.com/servegate/servegate/internal/compare"
)

// runCompare gates a pull request: see package internal/compare.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return compare.Main(ctx, args, stdout, stderr)
}
