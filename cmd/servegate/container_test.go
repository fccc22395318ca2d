package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/fixtures"
)

// TestBenchSimContainer runs servegate bench --target sim: the simulator
// image is built locally (cached by source hash) and started with
// testcontainers, then stopped when the run ends.
func TestBenchSimContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the simulator container; skipped with -short")
	}
	dockertest.Require(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--target", "sim", "--model", "servegate/sim",
		"--tokenizer", fixtures.Tokenizer(t, fixtures.Llama3), "--num-prompts", "10", "--random-input-len", "48",
		"--random-output-len", "8", "--request-rate", "50", "--no-plot", "--save-result", "--save-detailed",
		"--result-dir", dir}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), "Started sim target at http://127.0.0.1:")
	files, err := filepath.Glob(filepath.Join(dir, "openai-50.0qps-sim-*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var res struct {
		Completed  int   `json:"completed"`
		OutputLens []int `json:"output_lens"`
	}
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Equal(t, 10, res.Completed)
	assert.Equal(t, []int{8, 8, 8, 8, 8, 8, 8, 8, 8, 8}, res.OutputLens)
}
