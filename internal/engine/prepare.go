package engine

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/redact"
)

// This file holds what happens around the measured run: the LoRA choice,
// warm-ups, the readiness wait and the profiler calls.

// loraChoices picks a LoRA module for each of n requests ("" without
// modules), seeded from the run's seed.
func (cfg *Config) loraChoices(n int) []string {
	out := make([]string, n)
	if len(cfg.LoRAModules) == 0 {
		return out
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x10a))
	for i := range out {
		out[i] = cfg.LoRAModules[rng.IntN(len(cfg.LoRAModules))]
	}
	return out
}

// warmUp sends n copies of req, at most limit at a time (0: no limit),
// and returns their records.
func warmUp(ctx context.Context, c *client.Client, req client.Request, n, limit int) []metrics.Record {
	if n <= 0 {
		return nil
	}
	if limit <= 0 {
		limit = n
	}
	recs := make([]metrics.Record, n)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			recs[i] = c.Do(ctx, req)
		})
	}
	wg.Wait()
	return recs
}

// waitReady sends req until it succeeds, every interval, for at most
// timeout, like vLLM's wait_for_endpoint; unlike it, a 4xx answer (other
// than 408 and 429) stops at once with the server's message, since
// retrying a bad request for ten minutes helps nobody. The error names the
// last failure that said something about the server (a probe cut short by
// the deadline says nothing), and tells an interrupted wait from a timed
// out one.
func waitReady(ctx context.Context, c *client.Client, req client.Request, timeout, interval time.Duration) error {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := wctx.Deadline()
	var cause string
	for {
		last := c.Do(wctx, req)
		if last.Success {
			return nil
		}
		if s := last.HTTPStatus; last.SendCut || s >= 400 && s < 500 && s != 408 && s != 429 {
			return fmt.Errorf("initial test request failed, check the benchmark arguments: %s", last.Error)
		}
		// A probe that ended with the wait's deadline was cut short by it
		// (a dial then reports "i/o timeout", not a cancellation): it
		// says nothing about the server, and must not hide the refusal
		// before it. The clock tells, not wctx.Err(): the dial's poller
		// can pass the deadline before the context's own timer has run,
		// and on a loaded machine a probe cut at the deadline then
		// returned while wctx.Err() was still nil (make test, 2026-12-07).
		if last.Failure != metrics.FailureCanceled && last.Error != "" && wctx.Err() == nil && time.Now().Before(deadline) {
			cause = last.Error
		}
		timer := time.NewTimer(interval)
		select {
		case <-timer.C:
		case <-wctx.Done():
			timer.Stop()
			return readyError(ctx, time.Since(start), timeout, cause)
		}
	}
}

// readyError says why the ready wait ended without a good answer.
func readyError(ctx context.Context, waited, timeout time.Duration, cause string) error {
	what := fmt.Sprintf("endpoint not ready after %v", timeout)
	if ctx.Err() != nil {
		what = fmt.Sprintf("interrupted after %v waiting for the endpoint to be ready (%v)", waited.Round(time.Millisecond), context.Cause(ctx))
	}
	if cause == "" {
		return fmt.Errorf("%s: no answer", what)
	}
	return fmt.Errorf("%s: last failure: %s", what, cause)
}

// profile POSTs to one of vLLM's profiler endpoints.
func profile(ctx context.Context, h *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	resp, err := h.Do(req)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("profile: %s answered %s", redact.String(url), resp.Status)
	}
	return nil
}
