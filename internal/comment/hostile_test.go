package comment

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/mdsafe/mdtest"
)

const siteURL = "https://acme.github.io/llm/"

// chartLink is the only shape a link to a chart may take.
var chartLink = regexp.MustCompile(`^https://acme\.github\.io/llm/(scenario-[a-z0-9._-]+\.html#chart-[a-z0-9._-]+)?$`)

// reportMD is a gate report with a table, a list and a fence, as a gate
// writes one.
const reportMD = "### servegate gate\n\n| benchmark | unit |\n| --- | --- |\n| chat | ttft |\n\n- a warning\n\n```\nbenchstat output\n```\n"

// hostileBody renders the comment of a report in which every unit of the
// given benchmarks regressed.
func hostileBody(t testing.TB, names []string) string {
	rep := gate.Report{Verdict: gate.Fail}
	for _, n := range names {
		rep.Comparisons = append(rep.Comparisons, &gate.Comparison{
			Benchmark: n, Unit: n, Base: &gate.Sample{N: 5}, Head: &gate.Sample{N: 5},
			Delta: 0.2, P: 0.01, PAdjusted: 0.02, Gated: true, Verdict: gate.Fail,
		})
	}
	js, err := json.Marshal(&rep)
	require.NoError(t, err)
	body, err := Body(Input{Markdown: reportMD, JSON: js, Exit: 1, SiteURL: siteURL, Runner: "ubuntu-latest"})
	require.NoError(t, err)
	return body
}

// checkInert fails unless names changed nothing in the body but the text
// of code spans and the chart links' fragments: the body with benign
// names has the same shape and the same active elements.
func checkInert(t *testing.T, names []string) {
	t.Helper()
	benign := make([]string, len(names))
	for i := range names {
		benign[i] = "Scenarios/scenario=ok"
	}
	body, want := hostileBody(t, names), hostileBody(t, benign)
	links := regexp.MustCompile(`(Link|link) "?https://[^" \n]*"?`)
	norm := func(s string) string { return links.ReplaceAllString(s, "$1 URL") }
	var got, exp []string
	for _, f := range mdtest.Findings(body) {
		if f.Kind == "link" {
			assert.Regexp(t, chartLink, f.Value, "a link the body did not mean")
		}
		got = append(got, norm(f.String()))
	}
	for _, f := range mdtest.Findings(want) {
		exp = append(exp, norm(f.String()))
	}
	require.Equal(t, exp, got, "names %q made active elements:\n%s", names, body)
	require.Equal(t, norm(mdtest.Shape(want)), norm(mdtest.Shape(body)), "names %q changed the body's shape:\n%s", names, body)
}

// TestHostileNamesInBody: the names that broke out of the comment's list
// of regressed units stay code spans.
func TestHostileNamesInBody(t *testing.T) {
	names := []string{
		"Scenarios/scenario=z`](https://evil.example)@org/security-team",
		"Scenarios/scenario=`<details><summary>fine</summary>",
		"<details><summary>fine</summary>",
		"]: https://evil.example",
		"a|b\n\n# heading",
		"@org/team #12 www.evil.example",
	}
	body := hostileBody(t, names)
	for _, f := range mdtest.Findings(body) {
		switch f.Kind {
		case "link":
			assert.Regexp(t, chartLink, f.Value)
		case "html":
			assert.Contains(t, []string{"<!-- servegate-gate -->", "<details open><summary>The gate's report</summary>", "</details>"}, f.Value)
		default:
			t.Errorf("%s in the body:\n%s", f, body)
		}
	}
	checkInert(t, names)
}

// FuzzBodyNames: no benchmark or unit name makes a link, mention,
// reference or HTML element in the comment, or changes its shape.
func FuzzBodyNames(f *testing.F) {
	for _, n := range []string{"Scenarios/scenario=z`](https://evil.example)@org/security-team", "`<details>", "]:0", "a|b", "\x00\u202e"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if len(name) > 300 || strings.TrimSpace(name) == "" {
			t.Skip()
		}
		checkInert(t, []string{name, name + "2"})
	})
}

// TestCutClosesFence: a report cut at GitHub's limit inside an open code
// fence gets the fence closed, so the comment's own end stays HTML.
func TestCutClosesFence(t *testing.T) {
	for _, open := range []string{"```", "~~~~", "````text"} {
		md := "### report\n\n" + open + "\n" + strings.Repeat("benchstat line with | pipes and `ticks`\n", 5000)
		body, err := Body(Input{Markdown: md, Exit: 2})
		require.NoError(t, err)
		assert.LessOrEqual(t, len(body), MaxBody)
		fs := mdtest.Findings(body)
		require.NotEmpty(t, fs)
		assert.Equal(t, "html </details>", fs[len(fs)-1].String(), "the comment's end is inside the fence:\n%s", body[len(body)-300:])
		assert.Contains(t, body, "… (cut: the full report is in the job summary")
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		md   string
		n    int
		want string
	}{
		{"a\nb\n", 10, "a\nb\n"},
		{"line one\nline two\n", 12, "line one\n"},
		{"```\ncode\ncode\n", 11, "```\n```\n"},
		{"```go\ncode\n```\nafter\nmore\n", 22, "```go\ncode\n```\nafter\n"},
		{"~~~\n```\ncode\nmore code\n", 13, "~~~\n```\n~~~\n"},
		{"<details>\nx\nyy\nzzzzzzzzzzzzzzz\n", 22, "<details>\n</details>\n"},
		{"`````\n" + strings.Repeat("x\n", 10), 12, "`````\n`````\n"},
	} {
		got := cut(c.md, c.n)
		assert.Equal(t, c.want, got, "%q cut at %d", c.md, c.n)
		assert.LessOrEqual(t, len(got), c.n)
	}
}

// TestLongNamesFit: a name far longer than a comment, or many long
// names, still make a body GitHub takes, with every name cut to maxName
// bytes. One name of 70000 bytes made a body of 140661 bytes.
func TestLongNamesFit(t *testing.T) {
	long := strings.Repeat("ü", 35000)
	for _, names := range [][]string{
		{long},
		{strings.Repeat("`", 70000)},
		{long + "1", long + "2", long + "3", long + "4"},
	} {
		body := hostileBody(t, names)
		assert.LessOrEqual(t, len(body), MaxBody)
		assert.Contains(t, body, "…")
		assert.True(t, utf8.ValidString(body))
	}
	many := make([]string, 2000)
	for i := range many {
		many[i] = fmt.Sprintf("%s%d", strings.Repeat("n", 150), i)
	}
	body := hostileBody(t, many)
	assert.LessOrEqual(t, len(body), MaxBody)
	assert.Contains(t, body, "more: see the gate's report below")
}
