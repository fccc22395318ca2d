package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/store"
)

// git runs git in dir and returns its output.
func gitIn(tb testing.TB, dir string, env []string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(tb, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// TestHistoryPublishScript runs ci/history-publish.sh, the main-branch
// workflow's script, against a local bare repository: two jobs publish
// two commits at once (one push loses the race and retries), then a
// second run of the first commit lands beside the first. The branch then
// holds a store with every run and the site.
func TestHistoryPublishScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	script, err := filepath.Abs("../../ci/history-publish.sh")
	require.NoError(t, err)
	tmp := t.TempDir()
	// servegate is this test binary (TestMain).
	wrapper := filepath.Join(tmp, "servegate")
	require.NoError(t, os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nSERVEGATE_TEST_MAIN=1 exec %q \"$@\"\n", os.Args[0])), 0o755))
	origin := filepath.Join(tmp, "origin.git")
	require.NoError(t, os.Mkdir(origin, 0o755))
	gitIn(t, origin, nil, "init", "-q", "--bare")
	src := filepath.Join(tmp, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	gitIn(t, src, nil, "init", "-q")
	gitIn(t, src, nil, "remote", "add", "origin", origin)
	var commits []string
	for i := range 2 {
		date := fmt.Sprintf("GIT_COMMITTER_DATE=2026-01-0%dT10:00:00Z", i+1)
		gitIn(t, src, []string{date}, "commit", "-q", "--allow-empty", "-m", fmt.Sprint("c", i))
		commits = append(commits, gitIn(t, src, nil, "rev-parse", "HEAD"))
	}
	bench := func(i int) string {
		f := filepath.Join(t.TempDir(), "bench.benchfmt")
		require.NoError(t, os.WriteFile(f, []byte(fmt.Sprintf("scenario-sha: s\nBenchmarkScenarios/scenario=chat 1 0.0%d ttft-p99-sec 0 fail-ratio\n", 30+i)), 0o644))
		return f
	}
	publish := func(commit string, i int) (string, error) {
		cmd := exec.Command(script, bench(i))
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "SERVEGATE="+wrapper, "COMMIT="+commit, "RUNNER_TYPE=cpu4", "ATTEMPTS=8",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { outs[i], errs[i] = publish(commits[i], i) })
	}
	wg.Wait()
	t.Logf("publish 1:\n%s\npublish 2:\n%s", outs[0], outs[1])
	for i := range 2 {
		require.NoError(t, errs[i], outs[i])
		assert.Contains(t, outs[i], "pushed to gh-pages")
	}
	out, err := publish(commits[0], 2)
	require.NoError(t, err, out)

	check := filepath.Join(tmp, "check")
	gitIn(t, tmp, nil, "clone", "-q", "--branch", "gh-pages", origin, check)
	st, err := store.Open(filepath.Join(check, "store"))
	require.NoError(t, err)
	cs, _, err := st.Commits("cpu4")
	require.NoError(t, err)
	require.Len(t, cs, 2, "a concurrent publish was lost")
	assert.Equal(t, commits[0], cs[0].ID)
	assert.Len(t, cs[0].Runs, 2)
	assert.Len(t, cs[1].Runs, 1)
	for _, f := range []string{"index.html", "scenario-chat.html", ".nojekyll"} {
		_, err := os.Stat(filepath.Join(check, f))
		assert.NoError(t, err, f)
	}
	assert.Equal(t, "3", gitIn(t, check, nil, "rev-list", "--count", "HEAD"), "one commit per publish")
}
