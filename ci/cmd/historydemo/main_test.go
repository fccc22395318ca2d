package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemo runs a short demo on real in-process simulator runs: 14
// commits, the server 30% slower from the seventh. The history names the
// step's commit (or a neighbour, when noise blurs the edge) as a
// regression, and the site marks it. Tens of seconds.
//
// It runs only when asked (SERVEGATE_HISTORY_DEMO=1): whether E-divisive
// finds a 30% step among 2 runs a commit rides on the machine's noise,
// and no arithmetic bounds its miss rate below 1 in 1000 on a machine
// busy with the rest of the suite.
func TestDemo(t *testing.T) {
	if os.Getenv("SERVEGATE_HISTORY_DEMO") != "1" {
		t.Skip("real simulator runs whose outcome rides on the machine's noise; SERVEGATE_HISTORY_DEMO=1 runs it")
	}
	out := filepath.Join(t.TempDir(), "demo")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-out", out, "-commits", "14", "-runs", "2", "-step-at", "7", "-slowdown", "1.3"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	t.Log(stdout.String())
	id := func(i int) string {
		return fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprintf("history-demo commit %d", i))))
	}
	found := false
	for _, i := range []int{6, 7, 8} {
		if strings.Contains(stdout.String(), "shift at "+id(i)) {
			found = true
		}
	}
	assert.True(t, found, "the step at commit 7 was not found")
	assert.Contains(t, stdout.String(), "verdict: FAIL")
	page, err := os.ReadFile(filepath.Join(out, "site", "scenario-history-demo.html"))
	require.NoError(t, err)
	assert.Regexp(t, `\+[0-9.]+% regression`, string(page))

	// The store is never overwritten.
	code = run(context.Background(), []string{"-out", out}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "exists: remove it")
}
