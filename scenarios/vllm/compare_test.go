package vllm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envCompare runs TestCompareDeployment: two verdicts on real vLLM, each
// of several server starts, take 10 to 30 minutes.
const envCompare = "SERVEGATE_VLLM_COMPARE"

// TestCompareDeployment is "Gating a deployment" (docs/deployments.md)
// as a user meets it. It writes a module outside this checkout, with
// testdata/deploy's scenario and benchmark and a replace pointing back
// here, gives it a history and runs the README's command, `go tool
// servegate compare BASE HEAD`, there:
//
//  1. head turns vLLM's prefix cache off: exit 1, a regression;
//  2. head changes a comment only, an A/A of two server starts: exit 0.
//
// The scenario sends 60 completions one at a time. Their prompts share a
// 384-token prefix and add 256 tokens of their own. With the cache on,
// only the 256 are computed; with it off, all 640. That makes median
// TTFT about 20% higher (docs/deployments.md has the figures), four
// times the 5% tolerance. Case 2 passes with the verdict's design rate,
// about 99%, not 99.9%, so the test is opt-in: SERVEGATE_TARGET=vllm
// and SERVEGATE_VLLM_COMPARE=1. Its one trial so far did not decide in
// 5 pairs: median TTFT differed by up to 19% between two starts of the
// same server (docs/deployments.md). GOPROXY=off: nothing downloads.
func TestCompareDeployment(t *testing.T) {
	requireVLLM(t)
	if os.Getenv(envCompare) != "1" {
		t.Skipf("two verdicts on real vLLM take 10 to 30 minutes: set %s=1", envCompare)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "deploy")
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/deploy")))
	gomod := "module example.com/deploy\n\ngo 1.26.0\n\n" +
		"require github.com/servegate/servegate v0.0.0\n\n" +
		"replace github.com/servegate/servegate => " + root + "\n\n" +
		"tool github.com/servegate/servegate/cmd/servegate\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("out/\n"), 0o644))

	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOWORK", "GOPROXY", "GOFLAGS", "SERVEGATE_OUT":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOWORK=off", "GOPROXY=off")
	run := func(name string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		b, err := cmd.CombinedOutput()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return ee.ExitCode(), string(b)
		}
		require.NoError(t, err, "%s %v: %s", name, args, b)
		return 0, string(b)
	}
	must := func(name string, args ...string) {
		t.Helper()
		code, out := run(name, args...)
		require.Zero(t, code, "%s %v: %s", name, args, out)
	}
	// The module's requirements, from the module cache: GOFLAGS=-mod=mod
	// for this one command, as a user's go get would.
	must("env", "GOFLAGS=-mod=mod", "go", "mod", "tidy")
	edit := func(old, new string) {
		t.Helper()
		path := filepath.Join(dir, "scenarios", "chat.yaml")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(data), old)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
	}
	commit := func(tag string) {
		t.Helper()
		must("git", "add", "-A")
		must("git", "commit", "-qm", tag)
		must("git", "tag", tag)
	}
	must("git", "init", "-q", "-b", "main")
	commit("base")
	edit("args: [--enable-prefix-caching]", "args: [--no-enable-prefix-caching]")
	commit("uncached")
	edit("args: [--no-enable-prefix-caching]", "args: [--enable-prefix-caching]")
	edit("# The deployment", "# The same deployment:")
	commit("same")

	compare := func(base, head string) (int, string) {
		t.Helper()
		start := time.Now()
		code, out := run("go", "tool", "servegate", "compare", base, head)
		t.Logf("go tool servegate compare %s %s: exit %d in %s\n%s", base, head, code, time.Since(start).Round(time.Second), out)
		return code, out
	}
	code, out := compare("base", "uncached")
	assert.Equal(t, 1, code, "prefix caching off")
	assert.Contains(t, out, "target.args: --no-enable-prefix-caching (base: --enable-prefix-caching)", "the report names the flag that changed, once")
	code, _ = compare("base", "same")
	assert.Equal(t, 0, code, "the same deployment")
}
