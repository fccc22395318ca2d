// Package mdtest reads Markdown the way GitHub renders it, for tests of
// what writes it. It parses CommonMark with the GFM extensions (tables,
// strikethrough, autolinks, task lists) and lists what a reader could
// click or be notified by: links, autolinks, images, raw HTML, mentions
// and issue references.
package mdtest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

var md = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(parser.WithAttribute()))

// HostileNames are names that broke out of Markdown somewhere: a code
// span closed early, a link, a mention, raw HTML, a table cell split.
var HostileNames = []string{
	"z`](https://evil.example)@org/security-team",
	"`<details><summary>fine</summary>",
	"<details><summary>fine</summary>",
	"[click](javascript:alert(1))",
	"]: https://evil.example",
	"a|b|c\n\n# heading",
	"@org/team #12 www.evil.example",
	"``",
	"<img src=x onerror=alert(1)>",
}

// A Finding is one active element of a document.
type Finding struct {
	// Kind is "link", "autolink", "image", "html", "mention" or
	// "reference".
	Kind string
	// Value is the link's destination, the HTML's source or the
	// mention's text.
	Value string
}

func (f Finding) String() string { return f.Kind + " " + f.Value }

// GitHub finds mentions and references in rendered text, outside code
// and links. These patterns are looser than GitHub's, so a test errs on
// the side of failing.
var (
	mentionRE   = regexp.MustCompile(`@[A-Za-z0-9]`)
	referenceRE = regexp.MustCompile(`(#|GH-)[0-9]`)
)

// Findings lists the active elements of a Markdown document in order.
func Findings(doc string) []Finding {
	src := []byte(doc)
	root := md.Parser().Parse(text.NewReader(src))
	var out []Finding
	var texts strings.Builder
	flush := func() {
		t := texts.String()
		texts.Reset()
		for _, m := range mentionRE.FindAllString(t, -1) {
			out = append(out, Finding{"mention", m})
		}
		for _, m := range referenceRE.FindAllString(t, -1) {
			out = append(out, Finding{"reference", m})
		}
	}
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			flush()
			out = append(out, Finding{"link", string(n.Destination)})
		case *ast.AutoLink:
			flush()
			out = append(out, Finding{"autolink", string(n.URL(src))})
			return ast.WalkSkipChildren, nil
		case *ast.Image:
			flush()
			out = append(out, Finding{"image", string(n.Destination)})
		case *ast.RawHTML:
			flush()
			var b strings.Builder
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				b.Write(seg.Value(src))
			}
			out = append(out, Finding{"html", b.String()})
		case *ast.HTMLBlock:
			flush()
			var b strings.Builder
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			out = append(out, Finding{"html", strings.TrimSpace(b.String())})
		case *ast.CodeSpan, *ast.FencedCodeBlock, *ast.CodeBlock:
			flush()
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			texts.Write(n.Segment.Value(src))
			if n.SoftLineBreak() || n.HardLineBreak() {
				flush()
			}
		case *ast.String:
			texts.Write(n.Value)
		case *ast.Paragraph, *ast.Heading, *east.TableCell, *ast.ListItem:
			flush()
		}
		return ast.WalkContinue, nil
	})
	flush()
	return out
}

// Shape is the document's tree of nodes, one line per node, with the
// text of code spans left out. Two documents that differ only in what
// their code spans hold have the same shape.
func Shape(doc string) string {
	src := []byte(doc)
	root := md.Parser().Parse(text.NewReader(src))
	var b strings.Builder
	depth := 0
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			depth--
			return ast.WalkContinue, nil
		}
		fmt.Fprintf(&b, "%s%s", strings.Repeat(" ", depth), n.Kind())
		depth++
		switch n := n.(type) {
		case *ast.CodeSpan:
			b.WriteString(" …\n")
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			fmt.Fprintf(&b, " %q", n.Segment.Value(src))
		case *ast.String:
			fmt.Fprintf(&b, " %q", n.Value)
		case *ast.Link:
			fmt.Fprintf(&b, " %q", n.Destination)
		case *ast.Heading:
			fmt.Fprintf(&b, " %d", n.Level)
		}
		b.WriteString("\n")
		return ast.WalkContinue, nil
	})
	return b.String()
}

// proseText matches a text node's line of Shape.
var proseText = regexp.MustCompile(`^( *(?:Text|String)) .*$`)

// ProseShape is Shape without the text of text nodes, and with a run of
// text nodes as one: the tree that a name in running prose must not
// change.
func ProseShape(doc string) string {
	lines := strings.Split(Shape(doc), "\n")
	for i, l := range lines {
		lines[i] = proseText.ReplaceAllString(l, "$1")
	}
	return strings.Join(slices.Compact(lines), "\n")
}

// CodeSpans returns the text of every code span, as a renderer shows it.
func CodeSpans(doc string) []string {
	src := []byte(doc)
	root := md.Parser().Parse(text.NewReader(src))
	var out []string
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if c, ok := n.(*ast.CodeSpan); ok && entering {
			var b strings.Builder
			for k := c.FirstChild(); k != nil; k = k.NextSibling() {
				switch t := k.(type) {
				case *ast.Text:
					b.Write(t.Segment.Value(src))
				case *ast.String:
					b.Write(t.Value)
				}
			}
			out = append(out, b.String())
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return out
}
