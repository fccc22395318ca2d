// Command gate is "servegate gate" on its own: go run ./ci/cmd/gate
// [flags] BASE HEAD. Unlike cmd/servegate it builds without the tokenizer
// library. See package
// github.com/servegate/servegate/internal/gate for the flags and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/servegate/servegate/internal/gate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := gate.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
