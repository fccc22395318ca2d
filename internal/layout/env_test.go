package layout

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envName matches a variable's name. A name that ends in "_" is a family
// of variables: the code's "SERVEGATE_SIM_" prefix, the table's
// SERVEGATE_SIM_<KNOB>.
var envName = regexp.MustCompile(`SERVEGATE_[A-Z0-9_]+`)

// TestEnvironmentTable checks docs/environment.md against the code: every
// SERVEGATE_* name in a non-test Go file is in the table's first column,
// and every name there is in the code. A family in the table (a name
// ending in "_") covers the code's names it prefixes, and a family in the
// code covers the table's.
func TestEnvironmentTable(t *testing.T) {
	code := codeEnvNames(t, "../..")
	table := tableEnvNames(t, "../../docs/environment.md")
	require.NotEmpty(t, code)
	require.NotEmpty(t, table)
	for _, name := range code {
		assert.True(t, covered(name, table), "%s is read by %s but not in docs/environment.md's table", name, strings.Join(codeFiles[name], ", "))
	}
	for _, name := range table {
		assert.True(t, covered(name, code), "docs/environment.md lists %s, which no non-test Go file names", name)
	}
}

// codeFiles records where each name was found, for the failure message.
var codeFiles = map[string][]string{}

// codeEnvNames returns the SERVEGATE_* names of the module's non-test Go
// files, testdata left out, sorted.
func codeEnvNames(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, name := range envName.FindAllString(string(data), -1) {
			if !slices.Contains(codeFiles[name], rel) {
				codeFiles[name] = append(codeFiles[name], rel)
			}
			seen[name] = true
		}
		return nil
	})
	require.NoError(t, err)
	return sortedKeys(seen)
}

// tableEnvNames returns the names in the first column of the tables of
// a Markdown file, sorted.
func tableEnvNames(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `SERVEGATE_") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		name := envName.FindString(first)
		require.NotEmpty(t, name, "%s: %q", path, line)
		require.False(t, seen[name], "%s lists %s twice", path, name)
		seen[name] = true
	}
	return sortedKeys(seen)
}

// covered reports whether name is among names, or a family among them
// covers it, or it is a family that covers one of them.
func covered(name string, names []string) bool {
	for _, n := range names {
		switch {
		case n == name,
			strings.HasSuffix(n, "_") && strings.HasPrefix(name, n),
			strings.HasSuffix(name, "_") && strings.HasPrefix(n, name):
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestCovered: the family rules, and that a missing name fails.
func TestCovered(t *testing.T) {
	table := []string{"SERVEGATE_OUT", "SERVEGATE_SIM_"}
	assert.True(t, covered("SERVEGATE_OUT", table))
	assert.True(t, covered("SERVEGATE_SIM_MAX_NUM_SEQS", table))
	assert.False(t, covered("SERVEGATE_OUTPUT", table))
	assert.False(t, covered("SERVEGATE_SIMX", table))
	assert.True(t, covered("SERVEGATE_SIM_", []string{"SERVEGATE_SIM_PORT"}))
}
