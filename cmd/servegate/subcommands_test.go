package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSimServes starts `servegate sim` on a free loopback port, waits for
// /health, then stops it through its context.
func TestSimServes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sim", "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--model", "sim-model"}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d/health", port)
	healthy := false
	for i := 0; i < 200 && !healthy; i++ {
		select {
		case code := <-done:
			t.Fatalf("servegate sim exited early with %d", code)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			healthy = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		if !healthy {
			time.Sleep(25 * time.Millisecond)
		}
	}
	require.True(t, healthy, "no 200 from %s", url)
	cancel()
	assert.Equal(t, 0, <-done)
}

func TestSimBadFlag(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"sim", "--no-such-knob", "1"}, &bytes.Buffer{}, &stderr))
	assert.Contains(t, stderr.String(), "no-such-knob")
}

func TestGateNeedsBaseAndHead(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"gate"}, &bytes.Buffer{}, &stderr))
	assert.Contains(t, stderr.String(), "want BASE and HEAD")
}

// TestCompareIsACommand: servegate compare is dispatched, its usage is
// the package documentation, and bad input is exit 2.
func TestCompareIsACommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"compare", "-h"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "servegate compare [flags] BASE [HEAD]")
	assert.Equal(t, 2, run(context.Background(), []string{"compare"}, &bytes.Buffer{}, &stderr))
	assert.Contains(t, stderr.String(), "want BASE")
}

// TestTwinCommandsSayExperimental: the twin misses its accuracy goal,
// so each of its commands says it is experimental in its usage.
func TestTwinCommandsSayExperimental(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "calibrate", "--help"},
		{"sim", "predict", "--help"},
		{"sim", "--help"},
		{"capacity", "--help"},
		{"--help"},
	} {
		var out bytes.Buffer
		run(context.Background(), args, &out, &out)
		assert.Contains(t, strings.ToLower(out.String()), "experimental", "servegate %v", args)
	}
}

// TestComment: the comment subcommand prints the job status and a dry
// run's body; a wrong flag is exit 2.
func TestComment(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, runComment(context.Background(), []string{"status", "--exit", "1"}, func(string) string { return "" }, &stdout, &stderr))
	assert.Equal(t, "::error title=servegate: regression::a gated unit regressed beyond its tolerance (gate exit 1)\n", stdout.String())
	md := filepath.Join(t.TempDir(), "gate.md")
	require.NoError(t, os.WriteFile(md, []byte("report\n"), 0o644))
	stdout.Reset()
	assert.Equal(t, 0, runComment(context.Background(), []string{"post", "-markdown", md, "-exit", "0", "-dry-run"}, func(string) string { return "" }, &stdout, &stderr), stderr.String())
	assert.True(t, strings.HasPrefix(stdout.String(), "<!-- servegate-gate -->\n## ✅ servegate: pass"), stdout.String())
	stderr.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"comment", "post", "-no-such-flag"}, &bytes.Buffer{}, &stderr))
	assert.Contains(t, stderr.String(), "no-such-flag")
}
