package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/redact/redacttest"
)

// TestBenchRedactsSecrets plants credentials in a run (a URL password, an
// Authorization header and an x-api-key --header) against a server that
// echoes them in error bodies, and checks that no file the run writes, nor
// its stdout and stderr, carries any of them.
func TestBenchRedactsSecrets(t *testing.T) {
	tok := fixtures.Tokenizer(t, fixtures.Llama3)
	srv := redacttest.NewServer(t, "servegate/sim")
	dir := t.TempDir()
	args := []string{"bench", "--base-url", srv.URL(), "--model", "servegate/sim", "--tokenizer", tok,
		"--num-prompts", "9", "--random-input-len", "16", "--random-output-len", "4", "--seed", "5",
		"--header", "Authorization=Bearer " + redacttest.Bearer, "x-api-key=" + redacttest.APIKey,
		"--save-result", "--save-detailed", "--result-dir", dir, "--report", filepath.Join(dir, "report.html")}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())

	require.Positive(t, srv.Seen.Load(), "the planted credentials never reached the server")
	require.Positive(t, srv.Echoed.Load(), "no error echoed them")
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, files, 2, "the result JSON and the report")
	require.Equal(t, 2, redacttest.RequireCleanDir(t, dir))
	redacttest.RequireClean(t, "stdout", stdout.Bytes())
	redacttest.RequireClean(t, "stderr", stderr.Bytes())
}
