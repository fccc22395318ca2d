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

	vllmimage "github.com/servegate/servegate/containers/vllm"
)

// envCompare runs TestCompareDeployment: three verdicts on real vLLM, each
// of several server starts, take 25 to 70 minutes.
const envCompare = "SERVEGATE_VLLM_COMPARE"

// TestCompareDeployment is "Gating a deployment" (docs/deployments.md)
// as a user meets it. It writes a module outside this checkout, with
// testdata/deploy's scenario and benchmark and a replace pointing back
// here, gives it a history and runs the README's command, `go tool
// servegate compare BASE HEAD`, there:
//
//  1. head turns vLLM's prefix cache off: exit 1, a regression;
//  2. head caps a step's tokens at 128 (--max-num-batched-tokens), so
//     each prompt's prefill takes two steps: exit 1;
//  3. head changes a comment only, an A/A of two server starts: never
//     exit 1; exit 0, or 2 ("cannot judge") where the pairs are too
//     noisy for the design's cap.
//
// The scenario sends 60 completions one at a time. Their prompts share a
// 384-token prefix and add 256 tokens of their own. With the cache on,
// only the 256 are computed; with it off, all 640. That makes median
// TTFT about 20% higher (docs/deployments.md has the figures), four
// times the 5% tolerance. On this project's 2-core machines a pair of
// two vLLM starts varies by about 11% in median TTFT and 15% in median
// TPOT, past what 8 pairs resolve (BenchmarkDeployFloor). An A/A there
// ends in "cannot judge" at the cap, or, when three pairs agree by
// chance, in a false fail (BenchmarkSequentialRunNoise; it did on
// 2026-12-07), and then this test fails, as it should. The test is
// opt-in: SERVEGATE_TARGET=vllm and SERVEGATE_VLLM_COMPARE=1.
// GOPROXY=off: nothing downloads.
func TestCompareDeployment(t *testing.T) {
	requireVLLM(t)
	if os.Getenv(envCompare) != "1" {
		t.Skipf("three verdicts on real vLLM take 25 to 70 minutes: set %s=1", envCompare)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "deploy")
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/deploy")))
	// The module names the AVX512-VNNI image; on another CPU its user
	// would name the image `make vllm-image` built for theirs.
	img, err := vllmimage.ChooseImage(ctx, "/proc/cpuinfo")
	require.NoError(t, err)
	chat := filepath.Join(dir, "scenarios", "chat.yaml")
	data, err := os.ReadFile(chat)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(chat, []byte(strings.Replace(string(data), vllmimage.LocalImageAVX512VNNI, img.Image, 1)), 0o644))
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
	edit("args: [--no-enable-prefix-caching]", "args: [--enable-prefix-caching, --max-num-batched-tokens, \"128\"]")
	commit("budget")
	edit("args: [--enable-prefix-caching, --max-num-batched-tokens, \"128\"]", "args: [--enable-prefix-caching]")
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
	code, out = compare("base", "budget")
	assert.Equal(t, 1, code, "a prefill budget of 128 tokens")
	assert.Contains(t, out, "--max-num-batched-tokens 128", "the report names the flag that changed")
	code, out = compare("base", "same")
	// An A/A is never a regression. Where a pair's noise is past what
	// the design's cap resolves, it ends in "cannot judge" (exit 2) and
	// names the remedies, as on this project's 2-core machines
	// (BenchmarkDeployFloor in internal/gate/accuracy); elsewhere it
	// passes.
	switch code {
	case 0:
	case 2:
		assert.Contains(t, out, "cannot judge", "an A/A that ends in exit 2 says why")
		t.Logf("the same deployment: cannot judge here (this machine's floor, docs/deployments.md)")
	default:
		t.Errorf("the same deployment: exit %d, want 0 (or 2, cannot judge)", code)
	}
}
