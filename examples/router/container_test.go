package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/generic"
)

// buildContext builds the router statically into a copy of this directory's
// Dockerfile, as the README tells a user to, and returns the context.
func buildContext(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "router") // the image is servegate-target-router:<hash>
	require.NoError(tb, os.Mkdir(dir, 0o755))
	df, err := os.ReadFile("Dockerfile")
	require.NoError(tb, err)
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "Dockerfile"), df, 0o644))
	require.NoError(tb, dockertest.GoBuildStatic(context.Background(), ".", ".", filepath.Join(dir, "router")))
	return dir
}

// TestRouterContainer runs the router's image through the container target
// in front of two simulator replicas and streams completions through it:
// each one reaches a backend, whose ground truth knows it.
func TestRouterContainer(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ctr, err := generic.Run(ctx, generic.Spec{
		Build:    &generic.Build{Context: buildContext(t)},
		Port:     8080,
		Backends: []generic.Backend{{Kind: "sim", Replicas: 2, Knobs: map[string]string{"step_fixed_ms": "2"}}},
	})
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	base, err := ctr.BaseURL(ctx)
	require.NoError(t, err)

	for _, id := range []string{"router-1", "router-2"} {
		body := `{"model":"servegate/sim","prompt":"hello","max_tokens":4,"ignore_eos":true,"stream":true}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var events []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events = append(events, data)
			}
		}
		resp.Body.Close()
		require.GreaterOrEqual(t, len(events), 2, "tokens, then [DONE]: %q", events)
		assert.Equal(t, "[DONE]", events[len(events)-1], "the stream came through to its end")
		truth, err := ctr.Truth(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, 4, truth.OutputTokens)
	}
}
