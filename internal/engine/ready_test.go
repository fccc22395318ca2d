package engine

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// refusedURL is a loopback base URL nothing listens on.
func refusedURL(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// refusedThenHung is a loopback base URL that refuses connections for 100
// ms, then accepts them and never answers.
func refusedThenHung(tb testing.TB) string {
	tb.Helper()
	url := refusedURL(tb)
	done := make(chan struct{})
	tb.Cleanup(func() { close(done) })
	time.AfterFunc(100*time.Millisecond, func() {
		ln, err := net.Listen("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			return // the port was taken meanwhile: the test sees no hang
		}
		go func() { <-done; ln.Close() }()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-done; conn.Close() }()
		}
	})
	return url
}

// TestReadyWaitErrors: the ready wait names the real cause (connection
// refused), says when it was interrupted rather than timed out, and fails
// an unusable base URL at once.
func TestReadyWaitErrors(t *testing.T) {
	cfg := Config{Model: "m", ReadyInterval: 20 * time.Millisecond}

	t.Run("connection refused", func(t *testing.T) {
		cfg := cfg
		// 2 s, not less: on a machine loaded far past its cores the first
		// probe's dial alone took over 300 ms, and the error then named a
		// dial timeout instead of the refusal.
		cfg.BaseURL, cfg.ReadyTimeout = refusedURL(t), 2*time.Second
		_, err := Run(t.Context(), cfg, samples(1))
		if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "not ready after 2s") {
			t.Errorf("err = %v, want not ready after 2s, connection refused", err)
		}
	})
	// The last probe hangs until the deadline: the refusal before it is
	// still the cause.
	t.Run("connection refused, then a hanging probe", func(t *testing.T) {
		cfg := cfg
		cfg.BaseURL, cfg.ReadyTimeout = refusedThenHung(t), 400*time.Millisecond
		_, err := Run(t.Context(), cfg, samples(1))
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("err = %v, want the refusal as the cause", err)
		}
	})
	t.Run("interrupted during a hanging probe", func(t *testing.T) {
		cfg := cfg
		cfg.BaseURL, cfg.ReadyTimeout = refusedThenHung(t), 10*time.Minute
		ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
		defer cancel()
		_, err := Run(ctx, cfg, samples(1))
		if err == nil || strings.Contains(err.Error(), "10m0s") || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("err = %v, want interrupted with the refusal as the cause, no 10m0s", err)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		cfg := cfg
		cfg.BaseURL, cfg.ReadyTimeout = refusedURL(t), 10*time.Minute
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := Run(ctx, cfg, samples(1))
		if err == nil || strings.Contains(err.Error(), "10m0s") || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("err = %v, want interrupted with the last cause, no 10m0s", err)
		}
	})
	for _, base := range []string{"http://[::1", "127.0.0.1:8000", "ftp://127.0.0.1:8000", "http://"} {
		t.Run("bad base URL "+base, func(t *testing.T) {
			cfg := cfg
			cfg.BaseURL, cfg.ReadyTimeout = base, 10*time.Minute
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, err := Run(ctx, cfg, samples(1))
			if err == nil || !strings.Contains(err.Error(), "base URL") || ctx.Err() != nil {
				t.Errorf("err = %v (ctx %v), want a base URL error at once", err, ctx.Err())
			}
		})
	}
}
