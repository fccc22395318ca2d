package layout

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/servegate/servegate"

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
	Deps       []string
	CgoFiles   []string
}

// rel is a package's path inside the module ("" for the root).
func (p pkg) rel() string { return strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/") }

// ours returns the module's packages among paths, relative to the root.
func ours(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == module || strings.HasPrefix(p, module+"/") {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
		}
	}
	return out
}

func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Imports,Deps,CgoFiles", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	require.NoError(t, err)
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

// public are the packages a user's module may import. Everything else
// that is not a command lives under internal/.
var public = []string{
	"benchtest",
	"benchtest/scenario",
	"containers/dockertest",
	"containers/generic",
	"containers/simulator",
	"containers/vllm",
	"fixtures", // test data for servegate's own tests, documented as not an API
}

// TestPublicSurface: a package outside internal/ is a command, an example
// or one of the public packages.
func TestPublicSurface(t *testing.T) {
	for _, p := range list(t) {
		r := p.rel()
		if p.Name == "main" || strings.HasPrefix(r, "internal/") || r == "internal" ||
			strings.HasPrefix(r, "examples") || strings.HasPrefix(r, "scenarios") || strings.HasPrefix(r, "ci/") {
			continue
		}
		require.Contains(t, public, r, "package %s is importable by users: move it under internal/, or add it to the public API in docs/architecture.md and here", r)
	}
}

// TestImportRules checks the direction of imports between rooms.
func TestImportRules(t *testing.T) {
	for _, p := range list(t) {
		r := p.rel()
		deps := ours(p.Deps)
		imports := ours(p.Imports)
		switch {
		case strings.HasPrefix(r, "containers/"):
			// The server under test never depends on the benchmark library.
			for _, d := range deps {
				require.False(t, strings.HasPrefix(d, "benchtest") || d == "internal/pipeline",
					"%s imports %s: containers must not depend on the benchmark library", r, d)
			}
		case r == "internal/stats":
			// Pure statistics: nothing of servegate, no cgo.
			require.Empty(t, deps, "internal/stats imports %v", deps)
		case r == "internal/store":
			// The results store reads files; it needs no other room.
			for _, d := range deps {
				require.Equal(t, "internal/stats", d, "internal/store imports %s", d)
			}
		case r == "internal/gate":
			// The verdict reads result files and judges them: statistics,
			// the store and Markdown escaping, nothing that runs a server.
			for _, d := range deps {
				require.Contains(t, []string{"internal/stats", "internal/store", "internal/mdsafe"}, d,
					"internal/gate imports %s", d)
			}
		}
		if p.Name != "main" && !strings.HasPrefix(r, "examples") {
			// Production code never imports test data or commands.
			for _, d := range imports {
				require.NotEqual(t, "fixtures", d, "%s imports fixtures (test data)", r)
				require.False(t, strings.HasPrefix(d, "cmd/"), "%s imports the command %s", r, d)
			}
		}
	}
}

// TestNoCgoBelowTheStatistics: the statistics and the verdict build
// without cgo, so the gate runs where libtokenizers is not installed.
func TestNoCgoBelowTheStatistics(t *testing.T) {
	byPath := map[string]pkg{}
	for _, p := range list(t) {
		byPath[p.rel()] = p
	}
	for _, root := range []string{"internal/stats", "internal/gate", "internal/store"} {
		p, ok := byPath[root]
		require.True(t, ok, "no package %s: update this test and docs/architecture.md", root)
		for _, d := range append(ours(p.Deps), root) {
			require.Empty(t, byPath[d].CgoFiles, "%s depends on %s, which uses cgo", root, d)
		}
	}
}
