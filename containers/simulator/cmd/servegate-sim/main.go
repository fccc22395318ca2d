// Command servegate-sim runs servegate's vLLM-compatible simulator; it is
// the entry point of the simulator's container image. See package sim for
// the flags (servegate-sim -h).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/servegate/servegate/internal/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(sim.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
