// Package mdsafe writes untrusted names into GitHub-flavoured Markdown so
// that they stay text. A scenario, benchmark or unit name comes from a
// file anyone can edit in a pull request. Rendered carelessly, it can end
// a code span, open a link, mention a team or start an HTML element.
//
// Code puts a name in a code span, where nothing is parsed. Cell does the
// same inside a table row. Text escapes a name in running prose.
//
// A link's text should not hold a name. If it does, the line must not
// start with the link: a line that starts with '[' may be a link
// reference definition, whose label ends at the first ']', even one
// inside a code span.
package mdsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Empty is how an empty name is shown.
const Empty = "(empty)"

// Code returns name as an inline code span whose content is name.
// Control, format and bidirectional characters are shown as \u{...}
// escapes, so a name can neither break a line nor reorder the text.
func Code(name string) string {
	s := visible(name)
	if s == "" {
		return Empty
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	// CommonMark strips one space from each end of a code span that
	// starts and ends with one, unless it is all spaces. A backtick next
	// to the fence would join it.
	allSpaces := strings.Trim(s, " ") == ""
	if s[0] == '`' || s[len(s)-1] == '`' || (s[0] == ' ' && s[len(s)-1] == ' ' && !allSpaces) {
		s = " " + s + " "
	}
	return fence + s + fence
}

// Cell returns Code(name) for a cell of a GFM table row. A pipe splits
// cells even inside a code span, so it is escaped there.
func Cell(name string) string {
	return strings.ReplaceAll(Code(name), "|", `\|`)
}

// Text returns name escaped for running prose or a table cell, outside
// any code span. Every ASCII punctuation character gets a backslash. A zero-width space
// follows each '@' and '#', which stops mentions and references, since
// GitHub finds those in the rendered text.
func Text(name string) string {
	var b strings.Builder
	for _, r := range visible(name) {
		switch {
		case r == '@' || r == '#':
			b.WriteString(`\` + string(r) + "\u200b")
		case r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r)):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// visible replaces the characters that change layout without showing:
// controls, line and paragraph separators, format characters (zero-width
// and bidirectional marks) and invalid UTF-8.
func visible(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalid(s[i:]):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == ' ':
			b.WriteRune(r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || unicode.IsSpace(r):
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isInvalid reports whether s starts with an invalid UTF-8 byte, rather
// than an encoded U+FFFD.
func isInvalid(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && size <= 1
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// URL returns u for a link's destination, with every byte outside
// letters, digits and -._~:/?#@!$&+,;=%* percent-encoded. Spaces,
// brackets, quotes and parentheses can then neither end the destination
// nor start a title.
func URL(u string) string {
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("-._~:/?#@!$&+,;=%*", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
