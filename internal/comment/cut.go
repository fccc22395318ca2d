package comment

import "strings"

// cut shortens a Markdown document to at most n bytes, less room for
// the closers it appends. It cuts at the end of a line. A code fence
// left open at the cut is closed, and so is an open <details> element,
// so that the text after the report is not swallowed by either.
func cut(md string, n int) string {
	if len(md) <= n {
		return md
	}
	limit := n
	for {
		out := cutAt(md, limit)
		if len(out) <= n || limit == 0 {
			return out
		}
		limit = max(limit-(len(out)-n), 0)
	}
}

// cutAt cuts md at the last line end within limit bytes and closes what
// is open there.
func cutAt(md string, limit int) string {
	end := strings.LastIndexByte(md[:limit], '\n') + 1
	var fence string // the open fence's marker, "" when none is open
	details := 0
	for _, line := range strings.SplitAfter(md[:end], "\n") {
		t := strings.TrimLeft(line, " \t>")
		if fence != "" {
			if closes(t, fence) {
				fence = ""
			}
			continue
		}
		if f := opens(t); f != "" {
			fence = f
			continue
		}
		switch {
		case strings.HasPrefix(t, "<details"):
			details++
		case strings.HasPrefix(t, "</details>") && details > 0:
			details--
		}
	}
	out := md[:end]
	if fence != "" {
		out += fence + "\n"
	}
	for range min(details, 3) {
		out += "</details>\n"
	}
	return out
}

// opens returns the fence a line opens: its run of three or more
// backticks or tildes. A backtick fence's info string holds no backtick.
func opens(line string) string {
	for _, c := range []byte{'`', '~'} {
		k := 0
		for k < len(line) && line[k] == c {
			k++
		}
		if k >= 3 && (c == '~' || !strings.Contains(line[k:], "`")) {
			return line[:k]
		}
	}
	return ""
}

// closes reports whether a line closes a fence: the fence's character,
// at least as many times, then only spaces.
func closes(line, fence string) bool {
	k := 0
	for k < len(line) && line[k] == fence[0] {
		k++
	}
	return k >= len(fence) && strings.TrimSpace(line[k:]) == ""
}
