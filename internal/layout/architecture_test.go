package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pathRef matches a path in the module's tree as docs/architecture.md
// writes it: a top-level directory, then slash-separated elements, some
// of them brace lists such as internal/{engine,client}.
var pathRef = regexp.MustCompile(`\b(?:internal|benchtest|containers|cmd|ci|tools|fixtures)(?:/[\w.{},*-]+)*`)

// namedPaths returns the paths text names, brace lists expanded. An
// element "..." or "*" stands for the rest and ends the path before it.
func namedPaths(text string) []string {
	var out []string
	for _, m := range pathRef.FindAllString(text, -1) {
		for _, p := range expand(strings.TrimRight(m, "/.,")) {
			if i := strings.Index(p, "/..."); i >= 0 {
				p = p[:i]
			}
			p = strings.TrimSuffix(p, "/*")
			if p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// expand expands the first brace list of p, then the rest.
func expand(p string) []string {
	i := strings.Index(p, "{")
	j := strings.Index(p, "}")
	if i < 0 || j < i {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[i+1:j], ",") {
		if alt == "..." {
			continue
		}
		out = append(out, expand(p[:i]+alt+p[j+1:])...)
	}
	return out
}

// missing returns the paths text names that do not exist below root.
func missing(root, text string) []string {
	var out []string
	for _, p := range namedPaths(text) {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			out = append(out, p)
		}
	}
	return out
}

// TestArchitectureNamesRealPaths: every package or file that
// docs/architecture.md names exists.
func TestArchitectureNamesRealPaths(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	require.NoError(t, err)
	require.Contains(t, namedPaths(string(doc)), "internal/pipeline", "the path pattern found nothing")
	require.Empty(t, missing("../..", string(doc)),
		"docs/architecture.md names paths that do not exist: update the doc to the tree")
}

// TestArchitecturePathCheckFails: the check reports a path that is gone,
// inside a brace list too, and passes over "..." and "*".
func TestArchitecturePathCheckFails(t *testing.T) {
	text := "`internal/nosuch` and internal/{stats,gone,...} ─▶ containers/* and `ci/cmd/gate`."
	require.Equal(t, []string{"internal/nosuch", "internal/stats", "internal/gone", "containers", "ci/cmd/gate"}, namedPaths(text))
	require.Equal(t, []string{"internal/nosuch", "internal/gone"}, missing("../..", text))
}
