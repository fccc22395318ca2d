package examples

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// actionlint runs actionlint, a tool of this module, on files.
func actionlint(t *testing.T, files ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "go", append([]string{"tool", "actionlint", "-no-color"}, files...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// readmeWorkflows returns the YAML blocks of README.md's "Gating a pull
// request" section.
func readmeWorkflows(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	s := string(data)
	start := strings.Index(s, "### Gating a pull request")
	require.GreaterOrEqual(t, start, 0)
	end := strings.Index(s[start:], "\n## ")
	require.Greater(t, end, 0)
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(s[start:start+end], -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// uncommented drops a YAML file's comments and blank lines.
func uncommented(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		out = append(out, strings.TrimRight(l, " "))
	}
	return strings.Join(out, "\n") + "\n"
}

// TestREADMEWorkflows: the README shows the pull request's and main's
// whole workflows; they are the templates in ci/workflows/ without their
// comments, and actionlint passes them.
func TestREADMEWorkflows(t *testing.T) {
	blocks := readmeWorkflows(t)
	require.Len(t, blocks, 2, "the pull request's workflow and main's")
	dir := t.TempDir()
	var files []string
	for i, tmpl := range []string{"servegate-gate.yml", "servegate-history.yml"} {
		data, err := os.ReadFile(filepath.Join("..", "ci", "workflows", tmpl))
		require.NoError(t, err)
		assert.Equal(t, uncommented(string(data)), blocks[i], "README.md's workflow is ci/workflows/%s without comments", tmpl)
		assert.LessOrEqual(t, strings.Count(blocks[i], "\n"), 20, "a user writes about 15 lines")
		f := filepath.Join(dir, tmpl)
		require.NoError(t, os.WriteFile(f, []byte(blocks[i]), 0o644))
		files = append(files, f, filepath.Join("..", "ci", "workflows", tmpl))
	}
	out, err := actionlint(t, files...)
	assert.NoError(t, err, "actionlint:\n%s", out)
}

// TestActions: the two composite actions take the documented inputs and
// give the documented outputs, run every step under bash, and report,
// upload and set the status even when a step before failed.
func TestActions(t *testing.T) {
	for path, want := range map[string]struct{ inputs, outputs []string }{
		"../action.yml":         {[]string{"base", "packages", "policy", "prepare", "comment", "out", "github-token"}, []string{"verdict", "exit"}},
		"../history/action.yml": {[]string{"packages", "count", "runner-type", "store-branch", "keep-days", "keep-commits", "out"}, []string{"exit"}},
	} {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var a action
		require.NoError(t, yaml.Unmarshal(data, &a))
		assert.Equal(t, "composite", a.Runs.Using, path)
		var inputs, outputs []string
		for k := range a.Inputs {
			inputs = append(inputs, k)
		}
		for k := range a.Outputs {
			outputs = append(outputs, k)
		}
		assert.ElementsMatch(t, want.inputs, inputs, path)
		assert.ElementsMatch(t, want.outputs, outputs, path)
		for _, s := range a.Runs.Steps {
			if s.Uses != "" {
				assert.Regexp(t, `^actions/[a-z-]+@v\d+$`, s.Uses, "%s: pinned to a major version", path)
				continue
			}
			assert.Equal(t, "bash", s.Shell, "%s: step %q", path, s.Name)
			assert.NotContains(t, s.Run, "${{", "%s: step %q takes expressions through env, never into its script", path, s.Name)
			if strings.Contains(s.Run, "GITHUB_STEP_SUMMARY") || strings.Contains(s.Run, "servegate comment") {
				assert.Contains(t, s.If, "always()", "%s: step %q runs after a failure", path, s.Name)
			}
		}
	}
}
