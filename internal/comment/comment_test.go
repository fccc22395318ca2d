package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/site"
)

// fakeGitHub is the issue-comments API of one repository, in memory.
type fakeGitHub struct {
	t        *testing.T
	mu       sync.Mutex
	comments []comment
	nextID   int64
	posts    int
	patches  int
}

const (
	testRepo  = "acme/llm"
	testPR    = 42
	testToken = "test-token"
)

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	list := fmt.Sprintf("/repos/%s/issues/%d/comments", testRepo, testPR)
	edit := regexp.MustCompile(`^/repos/` + testRepo + `/issues/comments/(\d+)$`)
	var in struct {
		Body string `json:"body"`
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == list:
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		lo, hi := min((page-1)*per, len(f.comments)), min(page*per, len(f.comments))
		_ = json.NewEncoder(w).Encode(f.comments[lo:hi])
	case r.Method == http.MethodPost && r.URL.Path == list:
		require.NoError(f.t, json.NewDecoder(r.Body).Decode(&in))
		f.nextID++
		f.posts++
		c := comment{ID: f.nextID, Body: in.Body}
		f.comments = append(f.comments, c)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(c)
	case r.Method == http.MethodPatch && edit.MatchString(r.URL.Path):
		id, _ := strconv.ParseInt(edit.FindStringSubmatch(r.URL.Path)[1], 10, 64)
		require.NoError(f.t, json.NewDecoder(r.Body).Decode(&in))
		for i := range f.comments {
			if f.comments[i].ID == id {
				f.patches++
				f.comments[i].Body = in.Body
				_ = json.NewEncoder(w).Encode(f.comments[i])
				return
			}
		}
		http.NotFound(w, r)
	default:
		http.NotFound(w, r)
	}
}

// gateReports runs the real gate on a base and a head testdata pair and
// returns its Markdown and JSON report files and exit code.
func gateReports(t *testing.T, pair string) (md, js string, exit int) {
	t.Helper()
	dir := t.TempDir()
	md, js = filepath.Join(dir, "gate.md"), filepath.Join(dir, "gate.json")
	src := filepath.Join("..", "..", "..", "internal", "gate", "testdata", pair)
	exit = gate.Main(context.Background(), []string{"-markdown", md, "-json", js, filepath.Join(src, "base.txt"), filepath.Join(src, "head.txt")}, &bytes.Buffer{}, &bytes.Buffer{})
	return md, js, exit
}

// TestCommentCreatedThenUpdated posts the gate's report on a pull request
// that already has 150 other comments (two pages), then posts the next
// push's report: the first creates one comment, the second updates that
// one in place.
func TestCommentCreatedThenUpdated(t *testing.T) {
	fake := &fakeGitHub{t: t}
	for i := range 150 {
		fake.nextID++
		fake.comments = append(fake.comments, comment{ID: fake.nextID, Body: fmt.Sprintf("review comment %d", i)})
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_REPOSITORY": testRepo, "GITHUB_TOKEN": testToken}
	post := func(pair string) string {
		md, js, exit := gateReports(t, pair)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"post", "-markdown", md, "-json", js, "-exit", strconv.Itoa(exit), "-pr", strconv.Itoa(testPR),
			"-site", "https://acme.github.io/llm/", "-runner", "ubuntu-latest"}, func(k string) string { return env[k] }, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		return stdout.String()
	}

	out := post("regression")
	assert.Regexp(t, `^created comment 151 on acme/llm#42`, out)
	require.Len(t, fake.comments, 151)
	first := fake.comments[150].Body
	md, _, _ := gateReports(t, "regression")
	gateMD, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(first, "<!-- servegate-gate -->\n## ❌ servegate: regression\n"), first)
	assert.Contains(t, first, string(gateMD), "the body comes from the gate's Markdown")
	assert.Regexp(t, `- \[`+"`"+`[^`+"`"+`]+`+"`"+` of `+"`"+`[^`+"`"+`]+`+"`"+`\]\(https://acme\.github\.io/llm/scenario-[^)]+#chart-[^)]+\): \+\d+\.\d% \(p(=0\.\d{3}|<0\.001); base \d+ runs, head \d+ runs\)`, first)
	assert.Regexp(t, `It took \d+ base and \d+ head run\(s\) per scenario`, first)

	out = post("within")
	assert.Regexp(t, `^updated comment 151 on acme/llm#42`, out)
	assert.Len(t, fake.comments, 151, "a second comment was posted")
	assert.Equal(t, 1, fake.posts)
	assert.Equal(t, 1, fake.patches)
	second := fake.comments[150].Body
	assert.True(t, strings.HasPrefix(second, "<!-- servegate-gate -->\n## ✅ servegate: pass\n"), second)
	assert.NotContains(t, second, "Regressed")
	for i := range 150 {
		assert.Equal(t, fmt.Sprintf("review comment %d", i), fake.comments[i].Body, "another comment was touched")
	}
}

func TestPostRefuses(t *testing.T) {
	fake := &fakeGitHub{t: t}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	md, js, exit := gateReports(t, "regression")
	args := []string{"post", "-markdown", md, "-json", js, "-exit", strconv.Itoa(exit), "-pr", "42"}
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_REPOSITORY": testRepo, "GITHUB_TOKEN": "wrong"}, args, "401 Unauthorized: {\"message\":\"Bad credentials\"}"},
		{map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_REPOSITORY": testRepo}, args, "no GITHUB_TOKEN"},
		{map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_TOKEN": testToken}, args, `repository "": want OWNER/NAME`},
		{nil, []string{"post", "-markdown", md}, "want -markdown FILE and -exit CODE"},
		{nil, []string{"post", "-markdown", md, "-json", md, "-exit", "1", "-pr", "1"}, "the gate's JSON report"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), c.args, func(k string) string { return c.env[k] }, &bytes.Buffer{}, &stderr)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr.String(), c.want)
	}
	assert.Empty(t, fake.comments)
}

// TestStatus: each exit code gets its own title, and the job exits with
// the gate's code (anything unknown fails closed as 2).
func TestStatus(t *testing.T) {
	for _, c := range []struct {
		exit, want int
		line       string
	}{
		{0, 0, "::notice title=servegate: pass::no gated unit regressed (gate exit 0)\n"},
		{1, 1, "::error title=servegate: regression::a gated unit regressed beyond its tolerance (gate exit 1)\n"},
		{2, 2, "::error title=servegate: cannot tell::the gate could not reach a verdict (bad input or too few runs); see the job log (gate exit 2)\n"},
		{137, 2, "::error title=servegate: cannot tell::the gate exited 137: no verdict; see the job log (gate exit 137)\n"},
	} {
		var stdout bytes.Buffer
		assert.Equal(t, c.want, run(context.Background(), []string{"status", "-exit", strconv.Itoa(c.exit)}, func(string) string { return "" }, &stdout, &bytes.Buffer{}))
		assert.Equal(t, c.line, stdout.String())
	}
}

// TestDryRunCannotTell: a gate that wrote no JSON (exit 2 before a
// report) still gets a comment led by "cannot tell".
func TestDryRunCannotTell(t *testing.T) {
	md := filepath.Join(t.TempDir(), "gate.md")
	require.NoError(t, os.WriteFile(md, []byte("### ⚠️ servegate gate: ERROR: 1 problem(s)\n"), 0o644))
	var stdout bytes.Buffer
	code := run(context.Background(), []string{"post", "-markdown", md, "-json", filepath.Join(t.TempDir(), "missing.json"), "-exit", "2", "-dry-run"}, func(string) string { return "" }, &stdout, &bytes.Buffer{})
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout.String(), "<!-- servegate-gate -->\n## ⚠️ servegate: cannot tell\n"))
	assert.Contains(t, stdout.String(), "ERROR: 1 problem(s)")
	assert.Equal(t, "https://x/scenario-chat.html#"+site.ChartID("r", "Scenarios/scenario=chat", "ttft-p99-sec"), site.ChartURL("https://x", "r", "Scenarios/scenario=chat", "ttft-p99-sec"))
}

// TestNoReport: a gate that never ran (no Markdown) still gets a
// "cannot tell" comment; a missing report with exit 0 is an error.
func TestNoReport(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gate.md")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"post", "-markdown", missing, "-exit", "2", "-dry-run"}, func(string) string { return "" }, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "## ⚠️ servegate: cannot tell")
	assert.Contains(t, stdout.String(), "The gate wrote no report")
	stderr.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"post", "-markdown", missing, "-exit", "0", "-dry-run"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr))
	assert.Contains(t, stderr.String(), "read the gate's Markdown")
}

// TestOthersMentioningTheMarker: a reviewer's comment that mentions the
// hidden marker (quoting it, say) is not the gate's comment: it is never
// overwritten, and the gate's own comment is the one updated.
func TestOthersMentioningTheMarker(t *testing.T) {
	fake := &fakeGitHub{t: t}
	human := "The bot finds its comment by `<!-- servegate-gate -->`, see ci/cmd/prcomment."
	fake.nextID++
	fake.comments = append(fake.comments, comment{ID: fake.nextID, Body: human})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_REPOSITORY": testRepo, "GITHUB_TOKEN": testToken}
	for range 2 {
		md, js, exit := gateReports(t, "within")
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"post", "-markdown", md, "-json", js, "-exit", strconv.Itoa(exit), "-pr", strconv.Itoa(testPR)},
			func(k string) string { return env[k] }, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
	}
	require.Len(t, fake.comments, 2)
	assert.Equal(t, human, fake.comments[0].Body, "a reviewer's comment was overwritten")
	assert.True(t, strings.HasPrefix(fake.comments[1].Body, "<!-- servegate-gate -->\n"))
	assert.Equal(t, 1, fake.posts)
	assert.Equal(t, 1, fake.patches)
}

// TestBodyFitsWithManyRegressions: when every unit of many scenarios
// regresses (a broken build), the comment still fits GitHub's 65536
// characters, so it is posted rather than refused with a 422.
func TestBodyFitsWithManyRegressions(t *testing.T) {
	rep := gate.Report{Verdict: gate.Fail}
	for i := range 1000 {
		rep.Comparisons = append(rep.Comparisons, &gate.Comparison{
			Benchmark: fmt.Sprintf("Scenarios/scenario=chat-%04d-with-a-long-descriptive-name", i), Unit: "ttft-p99-sec",
			Base: &gate.Sample{N: 10}, Head: &gate.Sample{N: 10}, Delta: 0.25, P: 0.0001, PAdjusted: 0.0001,
			Gated: true, Verdict: gate.Fail,
		})
	}
	js, err := json.Marshal(&rep)
	require.NoError(t, err)
	body, err := commentBody(bodyInput{Markdown: strings.Repeat("| row |\n", 20000), JSON: js, Exit: 1,
		SiteURL: "https://acme.github.io/llm/", Runner: "ubuntu-latest", Marker: "servegate-gate"})
	require.NoError(t, err)
	assert.LessOrEqual(t, utf8.RuneCountInString(body), 65536)
	assert.True(t, strings.HasPrefix(body, "<!-- servegate-gate -->\n## ❌ servegate: regression\n"))
	assert.True(t, strings.Contains(body, "scenario=chat-0000"), "the first regressions are listed")
	assert.True(t, strings.Contains(body, "**Regressed (1000):**"), "the comment says how many regressed")
	assert.True(t, strings.Contains(body, "more: see the gate's report"), "the comment says the list is cut")
	assert.True(t, strings.HasSuffix(body, "</details>\n"), "the report's details are closed")
}
