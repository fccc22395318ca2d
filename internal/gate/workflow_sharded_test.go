package gate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/shard"
)

// actionlint runs actionlint, a tool of this module (go tool actionlint),
// on files and returns its output and exit error.
func actionlint(t *testing.T, files ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "go", append([]string{"tool", "actionlint", "-no-color"}, files...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestWorkflowsActionlint checks every workflow template with actionlint,
// and that actionlint does catch a broken one.
func TestWorkflowsActionlint(t *testing.T) {
	files, err := filepath.Glob("../../ci/workflows/*.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out, err := actionlint(t, files...)
	assert.NoError(t, err, "actionlint:\n%s", out)

	out, err = actionlint(t, "testdata/workflows/broken.yml")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out)
	assert.Equal(t, 1, exit.ExitCode(), out)
	assert.Contains(t, out, `property "shrad" is not defined`)
	assert.Contains(t, out, `job "merge" needs job "gaet" which does not exist`)
}

// TestShardedWorkflowTemplate checks the matrix template: the matrix and
// SHARDS agree, each job gets its SERVEGATE_SHARD, every shard uploads its
// report, the merge job runs even when a shard failed and merges with
// -shards, and the shipped suite leaves no shard of the matrix empty.
func TestShardedWorkflowTemplate(t *testing.T) {
	data, err := os.ReadFile("../../ci/workflows/servegate-gate-sharded.yml")
	require.NoError(t, err)
	type step struct {
		Name string            `yaml:"name"`
		Uses string            `yaml:"uses"`
		Run  string            `yaml:"run"`
		If   string            `yaml:"if"`
		With map[string]string `yaml:"with"`
	}
	var wf struct {
		Env  map[string]string `yaml:"env"`
		Jobs map[string]struct {
			Needs    any               `yaml:"needs"`
			If       string            `yaml:"if"`
			Env      map[string]string `yaml:"env"`
			Strategy struct {
				FailFast *bool            `yaml:"fail-fast"`
				Matrix   map[string][]int `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []step `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(data, &wf))
	n, err := strconv.Atoi(wf.Env["SHARDS"])
	require.NoError(t, err, "SHARDS")
	sh, ok := wf.Jobs["shard"]
	require.True(t, ok)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, sh.Strategy.Matrix["shard"], "the matrix lists shards 1..SHARDS")
	require.NotNil(t, sh.Strategy.FailFast)
	assert.False(t, *sh.Strategy.FailFast, "a regression on one shard must not cancel the others")
	assert.Equal(t, "${{ matrix.shard }}/"+strconv.Itoa(n), sh.Env[shard.EnvSuite])
	var runs []string
	uploads := false
	for _, s := range sh.Steps {
		runs = append(runs, s.Run)
		if strings.HasPrefix(s.Uses, "actions/upload-artifact") {
			uploads = true
			assert.Contains(t, s.If, "always()")
			assert.Contains(t, s.With["name"], "${{ matrix.shard }}")
		}
	}
	assert.True(t, uploads, "each shard uploads its gate.json")
	assert.Contains(t, strings.Join(runs, "\n"), "ci/compare.sh -mode interleaved", "gate -merge reads the reports of -mode interleaved")

	g, ok := wf.Jobs["gate"]
	require.True(t, ok)
	assert.Equal(t, "shard", g.Needs)
	assert.Contains(t, g.If, "always()", "merge when a shard failed: that is an error, not a skip")
	var all []string
	for _, s := range g.Steps {
		all = append(all, s.Uses+" "+s.Run)
		if strings.Contains(s.Run, "GITHUB_STEP_SUMMARY") || strings.Contains(s.Run, "servegate comment") {
			assert.Contains(t, s.If, "always()", s.Name)
		}
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"actions/download-artifact", `-merge -shards "$SHARDS"`, "-markdown", "GITHUB_STEP_SUMMARY", "servegate comment post", "servegate comment status -exit", `echo "exit=${PIPESTATUS[0]}"`} {
		assert.Contains(t, joined, want)
	}

	scs, err := scenario.LoadDir("../../scenarios")
	require.NoError(t, err)
	var names []string
	for _, sc := range scs {
		names = append(names, sc.Name)
	}
	assign := shard.Assign(names, n)
	for i := 1; i <= n; i++ {
		assert.NotEmpty(t, assign[i], "shard %d/%d gets no shipped scenario (assignment %v): lower SHARDS", i, n, assign)
	}
}
