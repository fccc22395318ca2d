// Command gate runs servegate's regression gate until "servegate gate"
// exists: go run ./ci/cmd/gate [flags] BASE HEAD. See package
// github.com/servegate/servegate/ci/gate for the flags and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/servegate/servegate/ci/gate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := gate.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
