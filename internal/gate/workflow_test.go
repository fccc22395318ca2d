package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// TestShippedPolicy checks that ci/policy.yaml is the built-in default.
func TestShippedPolicy(t *testing.T) {
	p, err := LoadPolicy("../../ci/policy.yaml")
	require.NoError(t, err)
	assert.Equal(t, DefaultPolicy(), p)
	data, err := os.ReadFile("../../ci/policy.yaml")
	require.NoError(t, err)
	assert.Equal(t, DefaultPolicyYAML, string(data), "regenerate with: go run ./ci/cmd/gate -print-policy > ci/policy.yaml")
}

// TestWorkflowTemplate checks the GitHub Actions template: it parses, runs
// on pull requests, and every step the gate depends on is there and
// points at files that exist.
func TestWorkflowTemplate(t *testing.T) {
	data, err := os.ReadFile("../../ci/workflows/servegate-gate.yml")
	require.NoError(t, err)
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Env   map[string]string `yaml:"env"`
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				If   string            `yaml:"if"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(data, &wf))
	assert.Contains(t, wf.On, "pull_request")
	job, ok := wf.Jobs["gate"]
	require.True(t, ok)

	var uses, runs []string
	for _, s := range job.Steps {
		if s.Uses != "" {
			uses = append(uses, strings.Split(s.Uses, "@")[0])
		}
		runs = append(runs, s.Run)
		if strings.Contains(s.Run, "GITHUB_STEP_SUMMARY") || strings.Contains(s.Uses, "upload-artifact") || strings.Contains(s.Run, "prcomment") {
			assert.Contains(t, s.If, "always()", "step %q must run when the gate fails", s.Name+s.Uses)
		}
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{"actions/checkout", "actions/setup-go", "actions/upload-artifact"} {
		assert.Contains(t, uses, want)
	}
	for _, want := range []string{"docker info", "make setup", "ci/compare.sh", "GITHUB_STEP_SUMMARY", "prcomment post", "prcomment status -exit"} {
		assert.Contains(t, all, want)
	}
	assert.Contains(t, all, `echo "exit=$?" >>"$GITHUB_OUTPUT"`, "the gate's exit code reaches the comment and the verdict")
	assert.NotEmpty(t, job.Env["SITE_URL"])
	assert.NotEmpty(t, job.Env["RUNNER_TYPE"])
	// Files the workflow names exist in the repository.
	for _, f := range []string{"ci/compare.sh", "ci/cmd/setup/main.go", "ci/cmd/prcomment/main.go", "Makefile"} {
		_, err := os.Stat(filepath.Join("..", "..", f))
		assert.NoError(t, err, f)
	}
	flags := strings.Fields(job.Env["GATE_FLAGS"])
	require.GreaterOrEqual(t, len(flags), 2)
	require.Equal(t, "-policy", flags[0])
	policy := flags[1]
	_, err = LoadPolicy(filepath.Join("..", "..", policy))
	assert.NoError(t, err, "GATE_FLAGS policy %q", policy)
	assert.NotEmpty(t, job.Env["COUNT"])
}

// TestHistoryWorkflowTemplate checks the main-branch template: it runs on
// pushes to main, may push the store branch, fetches the full history
// (commit times), benchmarks, publishes with ci/history-publish.sh, gates
// the history and sets the job's status from it even when a step failed.
func TestHistoryWorkflowTemplate(t *testing.T) {
	data, err := os.ReadFile("../../ci/workflows/servegate-history.yml")
	require.NoError(t, err)
	var wf struct {
		On          map[string]any    `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]struct {
			Env   map[string]string `yaml:"env"`
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				If   string            `yaml:"if"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(data, &wf))
	assert.Contains(t, wf.On, "push")
	assert.Equal(t, "write", wf.Permissions["contents"])
	job, ok := wf.Jobs["history"]
	require.True(t, ok)
	for _, k := range []string{"COUNT", "RUNNER_TYPE", "STORE_BRANCH", "KEEP_DAYS", "KEEP_COMMITS"} {
		assert.NotEmpty(t, job.Env[k], k)
	}
	var runs []string
	for _, s := range job.Steps {
		if strings.HasPrefix(s.Uses, "actions/checkout") {
			assert.Equal(t, "0", s.With["fetch-depth"], "commit times and the store branch need the history")
		}
		if strings.Contains(s.Run, "prcomment status") || strings.Contains(s.Run, "GITHUB_STEP_SUMMARY") {
			assert.Contains(t, s.If, "always()", s.Name)
		}
		runs = append(runs, s.Run)
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{"make setup", "-count \"$COUNT\"", "ci/history-publish.sh", "gate -history", "-runner \"$RUNNER_TYPE\"", "prcomment status -exit"} {
		assert.Contains(t, all, want)
	}
	info, err := os.Stat("../../ci/history-publish.sh")
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&0o100, "ci/history-publish.sh is executable")
}
