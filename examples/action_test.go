package examples

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// An actionStep is one step of a composite action.
type actionStep struct {
	ID    string            `yaml:"id"`
	Name  string            `yaml:"name"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	Shell string            `yaml:"shell"`
	Run   string            `yaml:"run"`
	Env   map[string]string `yaml:"env"`
	With  map[string]string `yaml:"with"`
}

// An action is the part of action.yml a runner reads.
type action struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

// An actionRun is what running the action's steps left behind.
type actionRun struct {
	// Failed says whether the action failed, as its job's status would.
	Failed bool
	// Outputs are the action's outputs; Summary the job summary.
	Outputs map[string]string
	Summary string
	// Ran and Skipped name the steps run and the steps passed over
	// (uses: steps, which call other actions).
	Ran, Skipped []string
	// Log is every step's output.
	Log string
}

// runAction runs the run: steps of the composite action in action.yml
// in dir, the way GitHub's runner does: inputs and the github context
// substituted into ${{ }}, each step's env, bash -eo pipefail, outputs
// through GITHUB_OUTPUT, a step after a failure only when its if: says
// always(). Steps that use other actions (cache, upload) are skipped.
// ctx is the github context, as dotted names ("event.pull_request.number").
func runAction(t *testing.T, ctx context.Context, path, dir string, env []string, inputs, github map[string]string) *actionRun {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var a action
	require.NoError(t, yaml.Unmarshal(data, &a))
	require.Equal(t, "composite", a.Runs.Using)
	vals := map[string]string{"runner.os": "Linux", "runner.arch": "X64"}
	for k, v := range github {
		vals["github."+k] = v
	}
	for k, in := range a.Inputs {
		vals["inputs."+k] = expand(in.Default, vals)
	}
	for k, v := range inputs {
		require.Contains(t, a.Inputs, k, "the action has no input %s", k)
		vals["inputs."+k] = v
	}
	tmp := t.TempDir()
	summary := filepath.Join(tmp, "summary.md")
	run := &actionRun{Outputs: map[string]string{}}
	var log strings.Builder
	for i, s := range a.Runs.Steps {
		name := s.Name + s.Uses
		if !condition(s.If, run.Failed, vals) {
			run.Skipped = append(run.Skipped, name)
			continue
		}
		if s.Uses != "" {
			run.Skipped = append(run.Skipped, name)
			continue
		}
		require.Equal(t, "bash", s.Shell, "step %q", name)
		script := filepath.Join(tmp, fmt.Sprintf("step%d.sh", i))
		require.NoError(t, os.WriteFile(script, []byte(expand(s.Run, vals)), 0o644))
		output := filepath.Join(tmp, fmt.Sprintf("output%d", i))
		require.NoError(t, os.WriteFile(output, nil, 0o644))
		cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = dir
		cmd.Env = append(env, "GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary, "GITHUB_ACTIONS=true")
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+expand(v, vals))
		}
		out, err := cmd.CombinedOutput()
		fmt.Fprintf(&log, "== step %q: %v\n%s\n", name, err, out)
		run.Ran = append(run.Ran, name)
		if err != nil {
			run.Failed = true
		}
		if s.ID != "" {
			for k, v := range readOutputs(t, output) {
				vals["steps."+s.ID+".outputs."+k] = v
			}
		}
	}
	for k, o := range a.Outputs {
		run.Outputs[k] = expand(o.Value, vals)
	}
	if b, err := os.ReadFile(summary); err == nil {
		run.Summary = string(b)
	}
	run.Log = log.String()
	return run
}

var exprRe = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// expand substitutes each ${{ name }} by its value ("" when unknown).
func expand(s string, vals map[string]string) string {
	return exprRe.ReplaceAllStringFunc(s, func(m string) string {
		return vals[exprRe.FindStringSubmatch(m)[1]]
	})
}

// condition evaluates an if: of the forms the action uses: terms joined
// by &&, each always(), a name (true when not empty) or a == b between
// names and 'literals'. No if: runs only when nothing failed.
func condition(cond string, failed bool, vals map[string]string) bool {
	if cond == "" {
		return !failed
	}
	always := false
	value := func(s string) string {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "'") {
			return strings.Trim(s, "'")
		}
		return vals[s]
	}
	for _, term := range strings.Split(cond, "&&") {
		term = strings.TrimSpace(term)
		switch l, r, eq := strings.Cut(term, "=="); {
		case term == "always()":
			always = true
		case eq:
			if value(l) != value(r) {
				return false
			}
		case value(term) == "" || value(term) == "false" || value(term) == "0":
			return false
		}
	}
	return always || !failed
}

// readOutputs reads a GITHUB_OUTPUT file of name=value lines.
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), "="); ok {
			out[k] = v
		}
	}
	return out
}

// fakeGitHub is the part of GitHub's API that the comment uses, as an
// Actions token sees it: GET /user refused, GraphQL's viewer the bot, and
// a pull request's comments, listed, created and updated.
type fakeGitHub struct {
	mu       sync.Mutex
	comments []string
}

func (g *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	bot := map[string]any{"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/user":
		http.Error(w, `{"message":"Resource not accessible by integration"}`, http.StatusForbidden)
	case r.Method == http.MethodPost && r.URL.Path == "/graphql":
		_, _ = io.WriteString(w, `{"data":{"viewer":{"login":"github-actions"}}}`)
	case r.Method == http.MethodGet:
		list := []map[string]any{}
		if r.URL.Query().Get("page") == "1" {
			for i, c := range g.comments {
				list = append(list, map[string]any{"id": i + 1, "body": c, "user": bot})
			}
		}
		_ = json.NewEncoder(w).Encode(list)
	case r.Method == http.MethodPost || r.Method == http.MethodPatch:
		var body struct{ Body string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.Method == http.MethodPost {
			g.comments = append(g.comments, body.Body)
		} else {
			g.comments[len(g.comments)-1] = body.Body
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": len(g.comments), "user": bot})
	default:
		http.Error(w, "unexpected", http.StatusBadRequest)
	}
}

// newFakeGitHub serves a fakeGitHub on loopback for the test.
func newFakeGitHub(t *testing.T) (*fakeGitHub, string) {
	g := &fakeGitHub{}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv.URL
}
