package mdsafe

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/servegate/servegate/internal/mdsafe/mdtest"
)

// hostile are names that broke out of Markdown somewhere.
var hostile = []string{
	"z`](https://evil.example)@org/security-team",
	"`<details><summary>fine</summary>",
	"<details><summary>fine</summary>",
	"<img src=x onerror=alert(1)>",
	"[click](javascript:alert(1))",
	"![x](https://evil.example/x.png)",
	"a|b|c",
	"a\\|b",
	"\\",
	"`",
	"``",
	" ` ",
	"  ",
	" lead",
	"trail ",
	"@org/team",
	"see #12 and GH-3 and acme/llm#4",
	"www.evil.example and https://evil.example and mail@evil.example",
	"line\nbreak\n\n# heading",
	"\r\n- item",
	"ab\u202ecd",
	"zero\u200bwidth",
	"tab\there",
	"bad \xff utf8",
	"<!-- -->",
	"&lt;script&gt;",
	"*emph* _under_ ~~strike~~",
	"[ref]: https://evil.example",
	"---",
	"| --- |",
	"<https://evil.example>",
	"\x00nul",
	"\u2028sep",
	"]:0",
	"]: https://evil.example",
	"ok",
}

// contexts put a rendered name where a writer would.
var contexts = []struct {
	name string
	wrap func(string) string
}{
	{"list", func(s string) string { return "- " + s + ": +5.0%\n" }},
	{"heading", func(s string) string { return "### " + s + "\n" }},
	// A line that starts with '[' may be a link reference definition,
	// whose label ends at the first ']', even inside a code span. So a
	// link whose text holds a name never starts a line.
	{"link text", func(s string) string { return "See [" + s + "](https://site.example/p.html#c)\n" }},
	{"table", func(s string) string { return "| name | n |\n| --- | --- |\n| " + s + " | 3 |\n" }},
	{"paragraph", func(s string) string { return "The scenario " + s + " regressed.\n" }},
	{"emphasis", func(s string) string { return "**Regressed:** " + s + "\n" }},
}

func check(t *testing.T, name string) {
	for _, c := range contexts {
		render := Code
		if c.name == "table" {
			render = Cell
		}
		doc := c.wrap(render(name))
		want := mdtest.Findings(c.wrap(render("ok")))
		assert.Equal(t, want, mdtest.Findings(doc), "%s: %q renders as %q", c.name, name, doc)
		if v := visible(name); v != "" {
			assert.Equal(t, mdtest.Shape(c.wrap(render("ok"))), mdtest.Shape(doc), "%s: %q changed the document's shape: %q", c.name, name, doc)
			assert.Equal(t, []string{v}, mdtest.CodeSpans(doc), "%s: %q is not shown as itself: %q", c.name, name, doc)
		}
		// Text: no active element, and the shape may differ only in text.
		doc = c.wrap(Text(name))
		assert.Equal(t, mdtest.Findings(c.wrap("ok")), mdtest.Findings(doc), "%s: text %q renders as %q", c.name, name, doc)
		assert.Empty(t, mdtest.CodeSpans(doc), "%s: text %q made a code span: %q", c.name, name, doc)
	}
}

func TestHostileNames(t *testing.T) {
	for _, name := range hostile {
		check(t, name)
	}
}

// FuzzNames: whatever the name, rendering it creates no link, mention,
// reference or HTML, and changes nothing but a code span's text.
func FuzzNames(f *testing.F) {
	for _, name := range hostile {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if len(name) > 200 {
			t.Skip()
		}
		check(t, name)
	})
}

func TestCode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"chat", "`chat`"},
		{"a`b", "``a`b``"},
		{"`x`", "`` `x` ``"},
		{" a ", "`  a  `"},
		{"", Empty},
		{"a\nb", "`a\\u{a}b`"},
	} {
		assert.Equal(t, c.want, Code(c.in), c.in)
	}
	assert.Equal(t, "`a\\|b`", Cell("a|b"))
	assert.True(t, strings.HasPrefix(Text("@org"), `\@`+"\u200b"))
}

func TestURL(t *testing.T) {
	assert.Equal(t, "https://x.example/a%20b%29%28%3C%3E%22%27%5C%60%5B%5D%C3%A9?q=1&r=2#c", URL("https://x.example/a b)(<>\"'\\`[]é?q=1&r=2#c"))
	for _, u := range []string{"https://x.example/a) [evil](https://evil.example", "https://x.example/ \"title\"", "https://x.example/<b>"} {
		doc := "See [chart](" + URL(u) + ").\n"
		assert.Len(t, mdtest.Findings(doc), 1, doc)
	}
}
