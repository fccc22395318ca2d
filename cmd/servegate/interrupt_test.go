package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets a test run this binary as the servegate command itself
// (SERVEGATE_TEST_MAIN=1), so that signals reach main's handler.
func TestMain(m *testing.M) {
	if os.Getenv("SERVEGATE_TEST_MAIN") == "1" {
		os.Args = append([]string{"servegate"}, os.Args[1:]...)
		main()
		return
	}
	os.Exit(m.Run())
}

// SIGINT in the middle of a run: the partial result is written and says
// it was interrupted, with the requests never sent, and the exit status
// is 130.
func TestBenchInterruptedWritesPartialResult(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "bench", "--target", "inproc", "--model", "servegate/sim",
		"--num-prompts", "400", "--random-input-len", "16", "--random-output-len", "4", "--request-rate", "20",
		"--save-result", "--save-detailed", "--result-filename", "r.json", "--result-dir", dir, "--no-plot")
	cmd.Env = append(os.Environ(), "SERVEGATE_TEST_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stdout.String(), "Starting main benchmark run") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // some requests sent, most not (400 at 20/s)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Equal(t, exitInterrupted, ee.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "warning: run interrupted")
	assert.Contains(t, stderr.String(), "servegate bench: interrupted")

	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err, "the partial result is written")
	var res struct {
		Interrupted bool   `json:"interrupted"`
		By          string `json:"interrupted_by"`
		Unsent      int    `json:"unsent_requests"`
		Completed   int    `json:"completed"`
	}
	require.NoError(t, json.Unmarshal(data, &res))
	assert.True(t, res.Interrupted)
	assert.NotEmpty(t, res.By)
	assert.Greater(t, res.Unsent, 0)
	assert.Less(t, res.Completed, 400)
}

// A whole run writes none of the interruption keys (vLLM's key set).
func TestBenchWholeRunNotInterrupted(t *testing.T) {
	dir := t.TempDir()
	benchInproc(t, "--save-result", "--result-filename", "r.json", "--result-dir", dir, "--no-plot")
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "interrupted")
}
