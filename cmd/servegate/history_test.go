package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestHistoryCommands runs the history subcommands end to end: adds of
// 12 commits with a 12% step at the eighth, the gate's change-point mode on
// the store, a prune, the site and both exports.
func TestHistoryCommands(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	for i := range 12 {
		ttft := 0.030
		if i >= 7 {
			ttft *= 1.20 // past the 15% tolerance of p99 TTFT
		}
		var b strings.Builder
		b.WriteString("scenario-sha: abc\n")
		for r := range 3 {
			fmt.Fprintf(&b, "BenchmarkScenarios/scenario=chat 1 %g ttft-p99-sec 0 fail-ratio\n", ttft*(1+0.01*float64(r-1)))
		}
		f := filepath.Join(t.TempDir(), "test.benchfmt")
		require.NoError(t, os.WriteFile(f, []byte(b.String()), 0o644))
		code, out, errOut := runCmd(t, "history", "add", "--store", store, "--commit", fmt.Sprintf("c%02d", i), "--commit-time", fmt.Sprint(1767225600+3600*i), "--runner", "cpu4", f)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, fmt.Sprintf("added 1 file(s) of commit c%02d", i))
	}
	code, out, errOut := runCmd(t, "gate", "-history", store)
	assert.Equal(t, 1, code, out+errOut)
	assert.Contains(t, out, "shift at c07")

	code, out, _ = runCmd(t, "history", "prune", "--store", store, "--keep-commits", "10", "--dry-run")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "would remove cpu4/c00\nwould remove cpu4/c01\n")

	site := filepath.Join(t.TempDir(), "site")
	code, out, errOut = runCmd(t, "history", "site", "--store", store, "--out", site, "--commit-url", "https://example.com/c/{commit}")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote 2 pages (2 charts, 24 points")
	page, err := os.ReadFile(filepath.Join(site, "scenario-chat.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), `href="https://example.com/c/c07"`)
	assert.Regexp(t, `\+(19|20|21)\.\d% regression`, string(page))

	code, out, errOut = runCmd(t, "history", "export", "--store", store, "--format", "bmf", "--commit", "c03")
	require.Equal(t, 0, code, errOut)
	var bmf map[string]map[string]map[string]float64
	require.NoError(t, json.Unmarshal([]byte(out), &bmf))
	assert.InDelta(t, 0.030, bmf["Scenarios/scenario=chat"]["ttft-p99-sec"]["value"], 1e-9)

	code, out, errOut = runCmd(t, "history", "export", "--store", store, "--format", "csv")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "time,commit,chat.fail-ratio,chat.ttft-p99-sec\n2026-01-01 00:00:00 +0000,c00,0,0.03\n"), out)
	assert.Equal(t, 13, strings.Count(out, "\n"))
}

func TestHistoryCommandsRefuse(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"history"}, "usage: servegate history"},
		{[]string{"history", "nope"}, `unknown command "nope"`},
		{[]string{"history", "add", "--commit", "x", "--commit-time", "1", "f"}, "the following arguments are required: --store"},
		{[]string{"history", "add", "--store", filepath.Join(empty, "s"), "--commit", "x", "--commit-time", "yesterday", "f"}, `--commit-time "yesterday"`},
		{[]string{"history", "site", "--store", empty, "--out", filepath.Join(empty, "site")}, "not a servegate history store"},
		{[]string{"history", "prune", "--store", empty}, "not a servegate history store"},
		{[]string{"history", "export", "--store", empty, "--format", "xml"}, "invalid choice: 'xml'"},
		{[]string{"history", "site", "--store", empty, "--out", empty, "--window", "0"}, "--window 0"},
		// A commit is never an option of git's, nor filed under a name git
		// would not resolve to itself.
		{[]string{"history", "add", "--store", filepath.Join(empty, "s"), "--commit=--output=/tmp/x", "f"}, "a commit does not start with '-'"},
		{[]string{"history", "add", "--store", filepath.Join(empty, "s"), "--commit", "no-such-commit-anywhere", "f"}, `--commit "no-such-commit-anywhere" without --commit-time`},
	} {
		code, _, errOut := runCmd(t, c.args...)
		assert.Equal(t, 2, code, c.args)
		assert.Contains(t, errOut, c.want, c.args)
	}
}

// TestHistoryCommandsRefuseAlteredStore: a stored result JSON whose
// ttfts were edited while its size was kept is refused by every command
// that reads the store, naming the run and the file.
func TestHistoryCommandsRefuseAlteredStore(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	for i := range 3 {
		dir := t.TempDir()
		bench := filepath.Join(dir, "test.benchfmt")
		require.NoError(t, os.WriteFile(bench, []byte("scenario-sha: abc\nBenchmarkScenarios/scenario=chat 1 0.03 ttft-p99-sec 0 fail-ratio\n"), 0o644))
		result := filepath.Join(dir, "chat.test.1.json")
		require.NoError(t, os.WriteFile(result, []byte(`{"scenario":"chat","scenario-sha":"abc","ttfts":[0.051,0.052,0.053]}`+"\n"), 0o644))
		code, _, errOut := runCmd(t, "history", "add", "--store", store, "--commit", fmt.Sprintf("c%02d", i), "--commit-time", fmt.Sprint(1767225600+3600*i), "--runner", "cpu4", bench, result)
		require.Equal(t, 0, code, errOut)
	}
	files, err := filepath.Glob(filepath.Join(store, "cpu4", "c01", "*", "chat.test.1.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	altered := strings.Replace(string(data), `"ttfts":[0.051`, `"ttfts":[0.951`, 1)
	require.NotEqual(t, string(data), altered)
	require.NoError(t, os.WriteFile(files[0], []byte(altered), 0o644))
	want := files[0] + ": altered: SHA-256"
	for _, args := range [][]string{
		{"gate", "-history", store},
		{"history", "site", "--store", store, "--out", filepath.Join(t.TempDir(), "site")},
		{"history", "export", "--store", store, "--format", "csv"},
		{"history", "export", "--store", store, "--format", "bmf"},
		{"history", "prune", "--store", store, "--keep-commits", "10", "--dry-run"},
		{"history", "prune", "--store", store, "--keep-commits", "10"},
	} {
		code, out, errOut := runCmd(t, args...)
		assert.Equal(t, 2, code, "%v: %s%s", args, out, errOut)
		assert.Contains(t, errOut, want, args)
	}
	_, err = os.Stat(files[0])
	assert.NoError(t, err, "the refused prune removed nothing")
}
