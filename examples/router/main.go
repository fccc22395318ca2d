// Command router is an example of what servegate measures for gateway and
// router teams: a small reverse proxy for OpenAI-compatible servers that
// sends each request to the backend with the fewest requests in flight
// (least outstanding requests; round-robin on request).
//
// It reads its backends from SERVEGATE_BACKENDS, which servegate's container
// target sets (http://sim-0:8000,http://sim-1:8000), and streams answers
// through as they come (server-sent events are flushed at once).
//
//	ROUTER_PORT=8080            listen port
//	ROUTER_POLICY=least         least (fewest in flight) or round-robin
//	ROUTER_EXTRA_DELAY=20ms     wait this long before forwarding each request:
//	                            the regression the example's gate test catches
//
// GET /health answers 200 (the router's own readiness); every other path
// is proxied. Build it static for a FROM-scratch image:
//
//	CGO_ENABLED=0 go build -o examples/router/router ./examples/router
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "router:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done.
func run(ctx context.Context, getenv func(string) string, logw io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	rt, err := newRouter(cfg)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: ":" + cfg.Port, Handler: rt, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(logw, "router: listening on :%s, %s over %d backends %v, extra delay %v\n",
		cfg.Port, cfg.Policy, len(cfg.Backends), cfg.Backends, cfg.ExtraDelay)
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
