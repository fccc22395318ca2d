package site

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/store"
)

const commitURL = "https://github.com/o/r/commit/{commit}"

func TestWrite(t *testing.T) {
	st := synth{scenarios: 2, commits: 40, stepAt: 25, step: 0.20, stepScenarios: 1}.build(t, filepath.Join(t.TempDir(), "store"))
	out := filepath.Join(t.TempDir(), "site")
	sum, err := Write(context.Background(), Config{Store: st, Out: out, CommitURL: commitURL})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"index.html", "scenario-scn-00.html", "scenario-scn-01.html"}, sum.Pages)
	assert.Equal(t, 6, sum.Charts, "fail-ratio, goodput and TTFT of two scenarios")
	assert.Equal(t, 240, sum.Points)

	page := read(t, out, "scenario-scn-00.html")
	// The TTFT chart marks the step at commit 25 as a regression.
	id := ChartID("cpu4", "Scenarios/scenario=scn-00", "ttft-p99-sec")
	sec := section(t, page, id)
	assert.Contains(t, sec, `data-points="40"`)
	assert.Regexp(t, `data-commit="`+commitID(25)+`"`, sec)
	assert.Regexp(t, `\+(19|20|21)\.\d% regression`, sec)
	assert.Contains(t, sec, `href="https://github.com/o/r/commit/`+commitID(0)+`"`)
	assert.Equal(t, 40, strings.Count(sec, `class="pt"`))
	assert.Contains(t, sec, "open shift")
	// No step in scenario 1.
	assert.Contains(t, section(t, read(t, out, "scenario-scn-01.html"), ChartID("cpu4", "Scenarios/scenario=scn-01", "ttft-p99-sec")), `data-changes="0"`)

	idx := read(t, out, "index.html")
	assert.Regexp(t, `scenario-scn-00.html">scn-00</a></td><td class="regression">regression`, idx)
	assert.Contains(t, idx, `href="scenario-scn-00.html#`+id+`"`)
	assert.Regexp(t, `scn-01</a></td><td class="pass">pass</td><td>none`, idx)
	// Nothing external: no script, no stylesheet link, no remote source.
	for _, p := range sum.Pages {
		body := read(t, out, p)
		assert.NotContains(t, body, "<script")
		assert.NotRegexp(t, `(src|href)="(https?:)?//[^"]*"`, strings.ReplaceAll(body, `href="https://github.com/o/r/commit/`, ""))
	}
	assert.Equal(t, "https://x.io/site/scenario-scn-00.html#"+id, ChartURL("https://x.io/site/", "cpu4", "Scenarios/scenario=scn-00", "ttft-p99-sec"))
}

func TestWriteRefuses(t *testing.T) {
	empty, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "site")
	_, err = Write(context.Background(), Config{Store: empty, Out: out})
	assert.ErrorContains(t, err, "holds no runs yet")
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "a refused site wrote something")

	st := synth{scenarios: 1, commits: 8}.build(t, filepath.Join(t.TempDir(), "store"))
	files, err := filepath.Glob(filepath.Join(st.Dir, "cpu4", commitID(3), "*", "test.benchfmt"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.NoError(t, os.Truncate(files[0], 5))
	_, err = Write(context.Background(), Config{Store: st, Out: out})
	assert.ErrorContains(t, err, "test.benchfmt: torn")
}

// TestShortHistory: a store too short to analyse still draws its points
// and says why there is no verdict.
func TestShortHistory(t *testing.T) {
	st := synth{scenarios: 1, commits: 4}.build(t, filepath.Join(t.TempDir(), "store"))
	out := filepath.Join(t.TempDir(), "site")
	_, err := Write(context.Background(), Config{Store: st, Out: out})
	require.NoError(t, err)
	assert.Contains(t, read(t, out, "index.html"), `class="cannot">cannot tell`)
	assert.Contains(t, read(t, out, "scenario-scn-00.html"), "not analysed: 4 commit(s)")
}

func TestSlug(t *testing.T) {
	assert.Equal(t, "chat-poisson", slug("chat-poisson"))
	assert.NotEqual(t, slug("a/b"), slug("a_b"))
	assert.Regexp(t, `^a_b-[0-9a-f]{6}$`, slug("a/b"))
	// A name kept as it is never looks like a changed one's slug.
	assert.Equal(t, "chat-460b3a", slug("Chat"))
	assert.NotEqual(t, slug("Chat"), slug("chat-460b3a"))
	assert.Regexp(t, `^chat-460b3a-[0-9a-f]{6}$`, slug("chat-460b3a"))
	assert.Equal(t, "chat-46", slug("chat-46"))
	assert.Equal(t, "chat", Scenario("Scenarios/scenario=chat"))
	assert.Equal(t, "X/y", Scenario("X/y"))
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(data)
}

// section returns the <section> of a chart id.
func section(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<section id="` + regexp.QuoteMeta(id) + `">.*?</section>`).FindString(page)
	require.NotEmpty(t, m, "no section %s", id)
	return m
}

// TestOnePagePerScenario: a scenario named as another's slug ("Chat" is
// chat-460b3a) gets a page of its own, and the count of pages written is
// the count of files.
func TestOnePagePerScenario(t *testing.T) {
	st := synth{scenarios: 2, commits: 4, names: []string{"Chat", "chat-460b3a"}}.build(t, filepath.Join(t.TempDir(), "store"))
	out := filepath.Join(t.TempDir(), "site")
	sum, err := Write(context.Background(), Config{Store: st, Out: out})
	require.NoError(t, err)
	assert.Len(t, sum.Pages, 3)
	files, err := os.ReadDir(out)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	assert.ElementsMatch(t, sum.Pages, names)
	for _, name := range []string{"Chat", "chat-460b3a"} {
		page := read(t, out, PageName(name))
		assert.Contains(t, page, "<title>"+name+" ", name)
		assert.Contains(t, read(t, out, "index.html"), `href="`+PageName(name)+`"`)
	}
}

// TestPageNameCollisionRefused: two scenarios whose page names are the
// same (two names changed to the same slug whose short hashes meet, found
// by search) are refused, never written over each other.
func TestPageNameCollisionRefused(t *testing.T) {
	a, b := slugCollision(t)
	st := synth{scenarios: 2, commits: 4, names: []string{a, b}}.build(t, filepath.Join(t.TempDir(), "store"))
	_, err := Write(context.Background(), Config{Store: st, Out: filepath.Join(t.TempDir(), "site")})
	require.ErrorContains(t, err, "would share the page "+PageName(a))
}

// slugCollision finds two names with the same slug: names of "x" and 16
// characters that each become "_", so only their short hashes differ.
func slugCollision(t *testing.T) (string, string) {
	seen := map[string]string{}
	for i := range 1 << 20 {
		var b strings.Builder
		b.WriteString("x")
		for k := range 16 {
			b.WriteByte("+:!#"[(i>>(2*k))&3])
		}
		name := b.String()
		if prev, ok := seen[slug(name)]; ok {
			return prev, name
		}
		seen[slug(name)] = name
	}
	t.Fatal("no collision found")
	return "", ""
}
