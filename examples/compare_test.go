package examples

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

	"github.com/servegate/servegate/containers/dockertest"
)

// envCompareAA runs the A/A half of TestCompareFromOutside: a verdict
// on no change, whose false-fail rate is the verdict's design rate.
const envCompareAA = "SERVEGATE_COMPARE_AA"

// prepare builds the example's server into its build context on each
// side, as the README's command does.
const prepare = "CGO_ENABLED=0 go build -o server/server ./server"

// TestCompareFromOutside is the README's "Gating a pull request", end to
// end, outside this module. It copies examples/gated, a user repository
// with a server of its own and a scenario, to a temporary directory with
// its replace pointing back at this checkout, gives it a git history and
// runs the action's steps and the documented command, `go tool servegate
// compare`, there:
//
//  1. the action, on a pull request whose server waits 8 ms more before
//     the first token: exit 1, a regression, in the job summary and in
//     one pull request comment (to a fake GitHub API);
//  2. on a head whose scenario sends other requests: exit 2, naming the
//     keys that differ, before any target starts;
//  3. on a base whose image does not build: exit 2, with base's log;
//  4. with SERVEGATE_COMPARE_AA=1, on a head that changes a comment: exit 0.
//
// Case 1 fails by construction about once in a million runs. The base
// server's TTFT is 40 ms of waiting plus about 1.5 ms of loopback and
// parsing. Head waits 48 ms, so its median TTFT is about 19% higher: a
// log ratio D = log(49.5/41.5) = 0.176, against a tolerance of 5%,
// delta = log 1.05 = 0.049. The closed design (docs/verdicts.md, "How
// it decides") splits alpha 0.01 and beta 0.05 over at most 5 gated
// figures and the 6 looks (one scenario: no split between scenarios).
// So a figure fails at a look once D is 3.40 standard errors above 0,
// and passes early only when the estimate is 2.94 standard errors below
// delta. The standard error at look k is the per-pair error e over
// sqrt(k), times Student's t reach: 3.0 at the third look, 1.29 at the
// eighth. This machine measured e between 0.015 and 0.04, so the third
// look's error is at most 0.069. An early pass then needs an estimate
// (0.176-0.049)/0.069 + 2.94 = 4.8 standard errors below D (p = 1e-6);
// later looks' errors are smaller, their early passes rarer still. The
// verdict fails head at the third look once e < 0.176/3.40 * sqrt(3)/3.0
// = 0.030, and at the last look, pair 8, once e < 0.176/3.40 * sqrt(8)
// / 1.29 = 0.113: only pairs whose median TTFT disagrees by about 11%,
// three times the worst this machine measured, would pass it, and the
// harness's health check marks runs that noisy invalid first.
//
// Case 4 is opt-in: no change passes with the verdict's design rate,
// about 99%, not 99.9%. GOPROXY=off: nothing downloads.
func TestCompareFromOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module and its server, and runs comparisons; skipped with -short")
	}
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "gated")
	copyDir(t, "gated", dir)
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	require.NoError(t, err)
	require.Contains(t, string(data), "=> ../..")
	require.NoError(t, os.WriteFile(gomod, []byte(strings.Replace(string(data), "=> ../..", "=> "+root, 1)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("server/server\nout/\n"), 0o644))

	env := compareEnv(t)
	out, err := goIn(ctx, dir, env, "mod", "tidy", "-diff")
	require.NoError(t, err, "examples/gated's go.mod or go.sum lag the checkout's; "+
		"run: cd examples/gated && cp ../../go.sum . && GOFLAGS=-mod=mod go mod tidy\n%s", out)

	git := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, b)
	}
	edit := func(file, old, new string) {
		t.Helper()
		path := filepath.Join(dir, file)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(data), old)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
	}
	commit := func(msg string) {
		t.Helper()
		git("commit", "-qam", msg)
		git("tag", msg)
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	commit("base")
	edit("server/main.go", "firstToken = 40 * time.Millisecond", "firstToken = 48 * time.Millisecond")
	commit("slower")
	edit("server/main.go", "firstToken = 48 * time.Millisecond", "firstToken = 40 * time.Millisecond // as base")
	commit("same")
	edit("scenarios/chat.yaml", "num_prompts: 200", "num_prompts: 100")
	commit("other-workload")
	edit("scenarios/chat.yaml", "num_prompts: 100", "num_prompts: 200")
	edit("server/Dockerfile", "COPY server /server", "COPY no-such-file /server")
	commit("broken-base")
	edit("server/Dockerfile", "COPY no-such-file /server", "COPY server /server")
	commit("fixed")

	compare := func(args ...string) (int, string) {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "servegate", "compare", "-prepare", prepare}, args...)...)
		cmd.Dir = dir
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		t.Logf("go tool servegate compare %s: exit %d in %s\n%s", strings.Join(args, " "), code, time.Since(start).Round(time.Second), b)
		return code, string(b)
	}

	// The action's steps, as a runner runs them, on a pull request whose
	// head is the slower server.
	gh, api := newFakeGitHub(t)
	git("checkout", "-q", "slower")
	start := time.Now()
	run := runAction(t, ctx, filepath.Join(root, "action.yml"), dir,
		append(env, "GITHUB_API_URL="+api, "GITHUB_REPOSITORY=me/gated"),
		map[string]string{"base": "base", "prepare": prepare},
		map[string]string{"token": "t0ken", "repository": "me/gated", "event.pull_request.number": "7",
			"event.pull_request.head.repo.full_name": "me/gated"})
	t.Logf("the action's steps in %s:\n%s", time.Since(start).Round(time.Second), run.Log)
	assert.True(t, run.Failed, "the job fails on a regression")
	assert.Equal(t, map[string]string{"exit": "1", "verdict": "regression"}, run.Outputs)
	assert.Contains(t, run.Summary, "## ❌ servegate: regression (exit 1)")
	assert.Contains(t, run.Summary, "The target differs between base and head:")
	require.Len(t, gh.comments, 1, "one pull request comment")
	assert.Contains(t, gh.comments[0], "servegate: regression")
	assert.Equal(t, []string{"actions/cache@v4", "actions/upload-artifact@v4"}, run.Skipped, "only the steps that use other actions")
	git("checkout", "-q", "fixed")

	code, text := compare("slower", "other-workload")
	assert.Equal(t, 2, code, "another workload")
	assert.Contains(t, text, "compare: scenario chat: its dataset differs between base (scenarios/chat.yaml:3) and head (scenarios/chat.yaml:3)")
	assert.NotContains(t, text, "pair 1:", "refused before any target starts")

	code, text = compare("broken-base", "fixed")
	assert.Equal(t, 2, code, "base's image does not build")
	assert.Contains(t, text, "compare: pair 1 of chat: start base's container target of scenario chat")
	assert.Contains(t, text, "no-such-file", "base's build log")

	if os.Getenv(envCompareAA) != "1" {
		t.Skipf("the A/A runs with %s=1", envCompareAA)
	}
	code, text = compare("base")
	assert.Equal(t, 0, code, "a comment changed:\n%s", text)
}

// compareEnv is this process's environment for the go command in the
// copied module, with the user's go env (setup done, CGO_LDFLAGS set),
// no workspace and no downloads.
func compareEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOWORK", "GOPROXY", "GOFLAGS", "SERVEGATE_OUT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOWORK=off", "GOPROXY=off")
}
