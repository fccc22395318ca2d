package examples

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/internal/gate"
)

// TestQuickstart is the user's path, end to end, outside this module: it
// copies examples/quickstart to a temporary directory with its replace
// pointing back at this checkout, and there
//
//  1. checks that the example's go.mod and go.sum are tidy against the checkout;
//  2. shows that go test does not link before setup (cannot find -ltokenizers);
//  3. runs `go run github.com/servegate/servegate/ci/cmd/setup`;
//  4. runs `go test ./...`, whose scenario runs on the simulator container
//     (the default target), and passes.
//
// The go env file is a temporary copy of this user's, so the setup
// command's `go env -w` never changes the machine's settings; the library
// cache is the real one (make setup fills it; a cold cache builds it with
// cargo). GOPROXY=off: nothing downloads.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("links and runs a module of its own; skipped with -short")
	}
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "quickstart")
	copyDir(t, "quickstart", dir)
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	require.NoError(t, err)
	require.Contains(t, string(data), "=> ../..")
	require.NoError(t, os.WriteFile(gomod, bytes.Replace(data, []byte("=> ../.."), []byte("=> "+root), 1), 0o644))

	env := userEnv(t)
	out, err := goIn(ctx, dir, env, "mod", "tidy", "-diff")
	require.NoError(t, err, "examples/quickstart's go.mod or go.sum lag the checkout's; "+
		"run: cd examples/quickstart && cp ../../go.sum . && GOFLAGS=-mod=mod go mod tidy\n%s", out)

	out, err = goIn(ctx, dir, env, "test", "-count=1", "-run", "^$", "./...")
	require.Error(t, err, "go test links before setup: the test cannot tell whether setup works\n%s", out)
	assert.Contains(t, out, "-ltokenizers", "before setup the link fails for want of the library")

	out, err = goIn(ctx, dir, env, "run", "github.com/servegate/servegate/ci/cmd/setup")
	require.NoError(t, err, "setup:\n%s", out)
	assert.Contains(t, out, "changed go env CGO_LDFLAGS")

	out, err = goIn(ctx, dir, append(env, "SERVEGATE_OUT="+t.TempDir()), "test", "-count=1", "-v", "./...")
	t.Logf("go test in the user's module:\n%s", out)
	require.NoError(t, err)
	assert.Contains(t, out, "--- PASS: TestScenarios/scenario=hello")
	assert.Contains(t, out, "scenario hello on sim target")
	assert.NotContains(t, out, "🐳", "testcontainers' log stays quiet")
}

// userEnv is this process's environment for the go command in the copied
// module: the user's go env file copied (minus CGO_LDFLAGS, which the
// setup command is to add), no CGO_LDFLAGS in the environment, no
// workspace, no downloads.
func userEnv(t *testing.T) []string {
	t.Helper()
	goenv := filepath.Join(t.TempDir(), "go.env")
	out, err := exec.Command("go", "env", "GOENV").Output()
	require.NoError(t, err)
	var kept []string
	if data, err := os.ReadFile(strings.TrimSpace(string(out))); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if line != "" && !strings.HasPrefix(line, "CGO_LDFLAGS=") {
				kept = append(kept, line)
			}
		}
	}
	require.NoError(t, os.WriteFile(goenv, []byte(strings.Join(kept, "\n")+"\n"), 0o644))
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CGO_LDFLAGS", "GOENV", "GOWORK", "GOPROXY", "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOENV="+goenv, "GOWORK=off", "GOPROXY=off")
}

// goIn runs the go command in dir and returns its combined output.
func goIn(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// copyDir copies the regular files under src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	require.NoError(t, err)
}

// TestExamplesClearTheFloor: every scenario of the shipped examples
// sends at least the paired verdict's floor of requests, so that
// servegate compare can judge it rather than exit 2.
func TestExamplesClearTheFloor(t *testing.T) {
	files := []string{"router/scenario.yaml"}
	for _, dir := range []string{"quickstart/scenarios", "gated/scenarios"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, m, dir)
		files = append(files, m...)
	}
	for _, f := range files {
		scs, err := scenario.LoadFile(f)
		require.NoError(t, err)
		for _, sc := range scs {
			assert.GreaterOrEqual(t, sc.Dataset.NumPrompts, gate.MinPairedRequests, "%s: scenario %s sends fewer requests than the paired verdict judges", f, sc.Name)
		}
	}
}
