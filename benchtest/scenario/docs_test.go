package scenario

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/metrics"
)

// docsPath is the scenario reference; sessionsPath is its multi-turn
// part, the guide to the sessions block.
const (
	docsPath     = "../../docs/scenarios.md"
	sessionsPath = "../../docs/sessions.md"
)

// readDocs returns the scenario reference and the sessions guide, joined.
func readDocs(tb testing.TB) []byte {
	tb.Helper()
	var all []byte
	for _, p := range []string{docsPath, sessionsPath} {
		doc, err := os.ReadFile(p)
		require.NoError(tb, err)
		all = append(append(all, doc...), '\n')
	}
	return all
}

// TestDocsListEveryKey keeps the docs true: every key of the schema
// appears as `key` in docs/scenarios.md or docs/sessions.md.
func TestDocsListEveryKey(t *testing.T) {
	doc := readDocs(t)
	var walk func(reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" && strings.Contains(opts, "inline") {
				walk(f.Type)
				continue
			}
			if tag == "" || tag == "-" {
				continue
			}
			assert.Contains(t, string(doc), "`"+tag+"`", "docs/scenarios.md and docs/sessions.md do not document key %s (%s.%s)", tag, ty.Name(), f.Name)
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Scenario]())
}

// TestDocsExamplesLoad parses every YAML example of docs/scenarios.md
// and docs/sessions.md.
func TestDocsExamplesLoad(t *testing.T) {
	doc := readDocs(t)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	require.GreaterOrEqual(t, len(blocks), 6, "one example per arrival pattern")
	for _, b := range blocks {
		name := strings.SplitN(b[1], "\n", 2)[0]
		t.Run(name, func(t *testing.T) {
			_, err := Parse("", []byte(b[1]))
			assert.NoError(t, err)
		})
	}
}

// TestDocsListEveryWord keeps the closed word lists and docs/scenarios.md
// together: every backend, dataset and target kind that the owning
// package lists is documented as `word`.
func TestDocsListEveryWord(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	require.NoError(t, err)
	for list, words := range map[string][]string{"client.Backends": client.Backends, "dataset.Names": dataset.Names, "TargetKinds": TargetKinds} {
		for _, w := range words {
			assert.Contains(t, string(doc), "`"+w+"`", "docs/scenarios.md does not document %s %q", list, w)
		}
	}
	for _, k := range metrics.FailureKinds {
		assert.Contains(t, string(doc), string(k), "docs/scenarios.md does not document failure kind %q", k)
	}
}
