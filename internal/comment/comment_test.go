package comment

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

// fakeGitHub is the issue-comments API of one repository, in memory,
// with the users its tokens stand for.
type fakeGitHub struct {
	t        *testing.T
	mu       sync.Mutex
	comments []issueComment
	nextID   int64
	posts    int
	patched  []int64
	// tokens maps a token to its user. A bot token gets 403 from GET
	// /user and answers GraphQL's viewer with viewer.
	tokens map[string]tokenUser
}

type tokenUser struct {
	user   user
	bot    bool
	viewer string
}

const (
	testRepo  = "acme/llm"
	testPR    = 42
	testToken = "test-token"
	botToken  = "actions-token"
)

var (
	alice   = user{Login: "alice", ID: 1001, Type: "User"}
	mallory = user{Login: "mallory", ID: 666, Type: "User"}
	actions = user{Login: "github-actions[bot]", ID: 41898282, Type: "Bot"}
)

func newFake(t *testing.T) *fakeGitHub {
	return &fakeGitHub{t: t, tokens: map[string]tokenUser{
		testToken: {user: alice},
		botToken:  {user: actions, bot: true, viewer: "github-actions"},
	}}
}

// add files a comment by u.
func (f *fakeGitHub) add(u user, body string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	uu := u
	f.comments = append(f.comments, issueComment{ID: f.nextID, Body: body, User: &uu})
	return f.nextID
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok, ok := f.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	list := fmt.Sprintf("/repos/%s/issues/%d/comments", testRepo, testPR)
	edit := regexp.MustCompile(`^/repos/` + testRepo + `/issues/comments/(\d+)$`)
	var in struct {
		Body  string `json:"body"`
		Query string `json:"query"`
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/user":
		if tok.bot {
			http.Error(w, `{"message":"Resource not accessible by integration"}`, http.StatusForbidden)
			return
		}
		_ = json.NewEncoder(w).Encode(tok.user)
	case r.Method == http.MethodPost && r.URL.Path == "/graphql":
		require.NoError(f.t, json.NewDecoder(r.Body).Decode(&in))
		login := tok.viewer
		if !tok.bot {
			login = tok.user.Login
		}
		fmt.Fprintf(w, `{"data":{"viewer":{"login":%q}}}`, login)
	case r.Method == http.MethodGet && r.URL.Path == list:
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		lo, hi := min((page-1)*per, len(f.comments)), min(page*per, len(f.comments))
		_ = json.NewEncoder(w).Encode(f.comments[lo:hi])
	case r.Method == http.MethodPost && r.URL.Path == list:
		require.NoError(f.t, json.NewDecoder(r.Body).Decode(&in))
		f.nextID++
		f.posts++
		u := tok.user
		c := issueComment{ID: f.nextID, Body: in.Body, User: &u}
		f.comments = append(f.comments, c)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(c)
	case r.Method == http.MethodPatch && edit.MatchString(r.URL.Path):
		id, _ := strconv.ParseInt(edit.FindStringSubmatch(r.URL.Path)[1], 10, 64)
		require.NoError(f.t, json.NewDecoder(r.Body).Decode(&in))
		for i := range f.comments {
			if f.comments[i].ID == id {
				// GitHub lets a repository's writers edit any comment;
				// the fake records every edit so a test sees it.
				f.patched = append(f.patched, id)
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
	src := filepath.Join("..", "gate", "testdata", pair)
	exit = gate.Main(context.Background(), []string{"-markdown", md, "-json", js, filepath.Join(src, "base.txt"), filepath.Join(src, "head.txt")}, &bytes.Buffer{}, &bytes.Buffer{})
	return md, js, exit
}

// post posts the gate's report of a testdata pair with a token.
func post(t *testing.T, srvURL, token, pair string) string {
	t.Helper()
	md, js, exit := gateReports(t, pair)
	env := map[string]string{"GITHUB_API_URL": srvURL, "GITHUB_REPOSITORY": testRepo, "GITHUB_TOKEN": token}
	var out bytes.Buffer
	p := Post{MarkdownFile: md, JSONFile: js, Exit: exit, PR: testPR, SiteURL: "https://acme.github.io/llm/", Runner: "ubuntu-latest",
		Getenv: func(k string) string { return env[k] }}
	require.NoError(t, p.Run(context.Background(), &out))
	return out.String()
}

// TestCommentCreatedThenUpdated posts the gate's report on a pull request
// that already has 150 other comments (two pages), then posts the next
// push's report: the first creates one comment, the second updates that
// one in place.
func TestCommentCreatedThenUpdated(t *testing.T) {
	fake := newFake(t)
	for i := range 150 {
		fake.add(mallory, fmt.Sprintf("review comment %d", i))
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	out := post(t, srv.URL, testToken, "regression")
	assert.Regexp(t, `^created comment 151 on acme/llm#42`, out)
	require.Len(t, fake.comments, 151)
	first := fake.comments[150].Body
	md, _, _ := gateReports(t, "regression")
	gateMD, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(first, "<!-- servegate-gate -->\n## ❌ servegate: regression\n"), first)
	assert.Contains(t, first, string(gateMD), "the body comes from the gate's Markdown")
	assert.Regexp(t, "- `[^`]+` of `[^`]+`: \\+\\d+\\.\\d% \\(p(=0\\.\\d{3}|<0\\.001); base \\d+ runs, head \\d+ runs\\), \\[chart\\]\\(https://acme\\.github\\.io/llm/scenario-[^)]+#chart-[^)]+\\)", first)
	assert.Regexp(t, `It took \d+ base and \d+ head run\(s\) per scenario`, first)

	out = post(t, srv.URL, testToken, "within")
	assert.Regexp(t, `^updated comment 151 on acme/llm#42`, out)
	assert.Len(t, fake.comments, 151, "a second comment was posted")
	assert.Equal(t, 1, fake.posts)
	assert.Equal(t, []int64{151}, fake.patched)
	second := fake.comments[150].Body
	assert.True(t, strings.HasPrefix(second, "<!-- servegate-gate -->\n## ✅ servegate: pass\n"), second)
	assert.NotContains(t, second, "Regressed")
	for i := range 150 {
		assert.Equal(t, fmt.Sprintf("review comment %d", i), fake.comments[i].Body, "another comment was touched")
	}
}

// TestLookAlikeOfAnotherUser: a comment by another user that starts with
// the marker is not the gate's comment. It is never updated. The gate
// creates its own, then updates that one, for a person's token and for
// an Actions token alike.
func TestLookAlikeOfAnotherUser(t *testing.T) {
	for _, c := range []struct {
		name, token string
		others      []user
	}{
		// A person's token: mallory's copy, and a bot's.
		{"person", testToken, []user{mallory, actions}},
		// The Actions token: mallory's copy, a user named like the bot
		// without "[bot]", and another app's bot.
		{"actions", botToken, []user{mallory, {Login: "github-actions", ID: 7, Type: "User"}, {Login: "evil-app[bot]", ID: 8, Type: "Bot"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake(t)
			look := "<!-- servegate-gate -->\n## ✅ servegate: pass\n\nNo gated unit regressed.\n"
			var ids []int64
			for _, u := range c.others {
				ids = append(ids, fake.add(u, look))
			}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			out := post(t, srv.URL, c.token, "regression")
			assert.Regexp(t, fmt.Sprintf(`^created comment %d on acme/llm#42`, len(ids)+1), out)
			out = post(t, srv.URL, c.token, "regression")
			assert.Regexp(t, fmt.Sprintf(`^updated comment %d on acme/llm#42`, len(ids)+1), out)
			assert.Equal(t, []int64{int64(len(ids) + 1)}, fake.patched, "only the gate's own comment is edited")
			for i := range ids {
				assert.Equal(t, look, fake.comments[i].Body, "another user's comment was changed")
			}
			assert.Contains(t, fake.comments[len(ids)].Body, "## ❌ servegate: regression")
		})
	}
}

// TestWhoAmIFails: a token whose identity cannot be asked posts nothing.
func TestWhoAmIFails(t *testing.T) {
	fake := newFake(t)
	fake.tokens[testToken] = tokenUser{user: alice, bot: true, viewer: ""}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	md, js, exit := gateReports(t, "within")
	env := map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_REPOSITORY": testRepo, "GITHUB_TOKEN": testToken}
	err := Post{MarkdownFile: md, JSONFile: js, Exit: exit, PR: testPR, Getenv: func(k string) string { return env[k] }}.Run(context.Background(), &bytes.Buffer{})
	require.ErrorContains(t, err, "who is the token: GraphQL viewer: no login")
	assert.Empty(t, fake.comments)
}

func TestGraphQLEndpoint(t *testing.T) {
	assert.Equal(t, "https://api.github.com/graphql", (&GitHub{API: "https://api.github.com/"}).graphQL())
	assert.Equal(t, "https://ghe.example/api/graphql", (&GitHub{API: "https://ghe.example/api/v3"}).graphQL())
	assert.Equal(t, "https://x/gql", (&GitHub{API: "https://ghe.example/api/v3", GraphQL: "https://x/gql"}).graphQL())
}

func TestPostRefuses(t *testing.T) {
	fake := newFake(t)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	md, js, exit := gateReports(t, "regression")
	good := Post{MarkdownFile: md, JSONFile: js, Exit: exit, PR: 42}
	for _, c := range []struct {
		env  map[string]string
		post Post
		want string
	}{
		{map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_REPOSITORY": testRepo, "GITHUB_TOKEN": "wrong"}, good, "401 Unauthorized: {\"message\":\"Bad credentials\"}"},
		{map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_REPOSITORY": testRepo}, good, "no GITHUB_TOKEN"},
		{map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_TOKEN": testToken}, good, `repository "": want OWNER/NAME`},
		{nil, Post{MarkdownFile: md, Exit: -1}, "want -markdown FILE and -exit CODE"},
		{nil, Post{MarkdownFile: md, JSONFile: md, Exit: 1, PR: 1}, "the gate's JSON report"},
		{nil, Post{MarkdownFile: md, Exit: 1}, "-pr 0: want the pull request number"},
	} {
		p := c.post
		p.Getenv = func(k string) string { return c.env[k] }
		assert.ErrorContains(t, p.Run(context.Background(), &bytes.Buffer{}), c.want)
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
		assert.Equal(t, c.want, Status(c.exit, &stdout))
		assert.Equal(t, c.line, stdout.String())
	}
}

// TestDryRunCannotTell: a gate that wrote no JSON (exit 2 before a
// report) still gets a comment led by "cannot tell".
func TestDryRunCannotTell(t *testing.T) {
	md := filepath.Join(t.TempDir(), "gate.md")
	require.NoError(t, os.WriteFile(md, []byte("### ⚠️ servegate gate: ERROR: 1 problem(s)\n"), 0o644))
	var stdout bytes.Buffer
	p := Post{MarkdownFile: md, JSONFile: filepath.Join(t.TempDir(), "missing.json"), Exit: 2, DryRun: true}
	require.NoError(t, p.Run(context.Background(), &stdout))
	assert.True(t, strings.HasPrefix(stdout.String(), "<!-- servegate-gate -->\n## ⚠️ servegate: cannot tell\n"))
	assert.Contains(t, stdout.String(), "ERROR: 1 problem(s)")
	assert.Equal(t, "https://x/scenario-chat.html#"+site.ChartID("r", "Scenarios/scenario=chat", "ttft-p99-sec"), site.ChartURL("https://x", "r", "Scenarios/scenario=chat", "ttft-p99-sec"))
}

// TestNoReport: a gate that never ran (no Markdown) still gets a
// "cannot tell" comment; a missing report with exit 0 is an error.
func TestNoReport(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gate.md")
	var stdout bytes.Buffer
	require.NoError(t, Post{MarkdownFile: missing, Exit: 2, DryRun: true}.Run(context.Background(), &stdout))
	assert.Contains(t, stdout.String(), "## ⚠️ servegate: cannot tell")
	assert.Contains(t, stdout.String(), "The gate wrote no report")
	assert.ErrorContains(t, Post{MarkdownFile: missing, Exit: 0, DryRun: true}.Run(context.Background(), &bytes.Buffer{}), "read the gate's Markdown")
}

// TestOthersMentioningTheMarker: a reviewer's comment that mentions the
// hidden marker (quoting it, say) is not the gate's comment: it is never
// overwritten, and the gate's own comment is the one updated.
func TestOthersMentioningTheMarker(t *testing.T) {
	fake := newFake(t)
	human := "The bot finds its comment by `<!-- servegate-gate -->`, see internal/comment."
	fake.add(alice, human)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	for range 2 {
		post(t, srv.URL, testToken, "within")
	}
	require.Len(t, fake.comments, 2)
	assert.Equal(t, human, fake.comments[0].Body, "a reviewer's comment was overwritten")
	assert.True(t, strings.HasPrefix(fake.comments[1].Body, "<!-- servegate-gate -->\n"))
	assert.Equal(t, 1, fake.posts)
	assert.Equal(t, []int64{2}, fake.patched)
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
	body, err := Body(Input{Markdown: strings.Repeat("| row |\n", 20000), JSON: js, Exit: 1,
		SiteURL: "https://acme.github.io/llm/", Runner: "ubuntu-latest"})
	require.NoError(t, err)
	assert.LessOrEqual(t, utf8.RuneCountInString(body), 65536)
	assert.True(t, strings.HasPrefix(body, "<!-- servegate-gate -->\n## ❌ servegate: regression\n"))
	assert.True(t, strings.Contains(body, "scenario=chat-0000"), "the first regressions are listed")
	assert.True(t, strings.Contains(body, "**Regressed (1000):**"), "the comment says how many regressed")
	assert.True(t, strings.Contains(body, "more: see the gate's report"), "the comment says the list is cut")
	assert.True(t, strings.HasSuffix(body, "</details>\n"), "the report's details are closed")
}
