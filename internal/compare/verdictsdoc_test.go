package compare

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/gate"
)

// verdictsDoc is the guide to the verdict, from this package's directory.
const verdictsDoc = "../../docs/verdicts.md"

// TestVerdictsDoc checks docs/verdicts.md against the code. Its table of
// gated figures must match the default policy's rules and tolerances.
// The other rules it names, with the table, must be the whole default
// policy. Each servegate and ci/compare.sh command it shows must take
// the flags it is shown with. Each go test command must name tests that
// exist in its package.
func TestVerdictsDoc(t *testing.T) {
	data, err := os.ReadFile(verdictsDoc)
	require.NoError(t, err)
	doc := string(data)
	t.Run("gated table", func(t *testing.T) { checkGatedTable(t, doc) })
	t.Run("commands", func(t *testing.T) { checkDocCommands(t, doc) })
}

// section returns the text of doc's "## title" section.
func section(tb testing.TB, doc, title string) string {
	tb.Helper()
	_, rest, ok := strings.Cut(doc, "\n## "+title+"\n")
	require.True(tb, ok, "docs/verdicts.md has no section %q", title)
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

var (
	tableRow  = regexp.MustCompile("(?m)^\\| `([a-z0-9/-]+)` \\| ([^|,]+?)(?:,[^|]*)? \\|")
	codeSpan  = regexp.MustCompile("`([a-z0-9/-]+)`")
	otherPara = regexp.MustCompile(`(?s)The policy file holds other rules too:(.*?)\n\n`)
)

// checkGatedTable compares "What is gated" with gate.DefaultPolicy.
func checkGatedTable(t *testing.T, doc string) {
	body := section(t, doc, "What is gated")
	rules := map[string]string{}
	for _, r := range gate.DefaultPolicy().Rules {
		rules[r.Unit] = r.Tolerance.String()
	}
	rows := tableRow.FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, rows, "the table of gated figures")
	named := map[string]bool{}
	for _, row := range rows {
		unit, tol := row[1], strings.TrimSpace(row[2])
		named[unit] = true
		want, ok := rules[unit]
		if !assert.True(t, ok, "the table gates %s, which the default policy has no rule for", unit) {
			continue
		}
		assert.Equal(t, strings.TrimPrefix(want, "+"), strings.TrimPrefix(tol, "+"), "%s: the table's tolerance, the default policy's", unit)
	}
	other := otherPara.FindStringSubmatch(body)
	require.NotNil(t, other, `the paragraph "The policy file holds other rules too"`)
	for _, m := range codeSpan.FindAllStringSubmatch(other[1], -1) {
		named[m[1]] = true
		assert.Contains(t, rules, m[1], "the guide names %s as a rule of the default policy", m[1])
	}
	for unit := range rules {
		// "the speculative-decoding ratios" names these two.
		if strings.HasPrefix(unit, "server-spec-") {
			continue
		}
		assert.True(t, named[unit], "the default policy's rule %s is not in the guide", unit)
	}
}

var (
	codeBlock  = regexp.MustCompile("(?s)```sh\n(.*?)```")
	inline     = regexp.MustCompile("`([^`\n]+)`")
	docCommand = regexp.MustCompile(`^(?:go tool )?(servegate compare|servegate gate|ci/compare\.sh|go test)((?: .*)?)$`)
	flagToken  = regexp.MustCompile(`^--?[a-z][a-z-]*$`)
	runFlag    = regexp.MustCompile(`-run '([^']+)'`)
)

// docCommands returns the commands the guide shows: each line of its sh
// code blocks, its comment cut off, and each code span.
func docCommands(doc string) []string {
	var out []string
	for _, m := range codeBlock.FindAllStringSubmatch(doc, -1) {
		for line := range strings.Lines(m[1]) {
			line, _, _ = strings.Cut(line, " #")
			out = append(out, strings.TrimSpace(line))
		}
	}
	for _, m := range inline.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkDocCommands checks each command the guide shows.
func checkDocCommands(t *testing.T, doc string) {
	counts := map[string]int{}
	for _, line := range docCommands(doc) {
		m := docCommand.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cmd, rest := m[1], m[2]
		counts[cmd]++
		for _, tok := range strings.Fields(rest) {
			if tok == ">" || tok == "|" {
				break
			}
			if !flagToken.MatchString(tok) {
				continue
			}
			switch cmd {
			case "servegate compare":
				assert.True(t, takesFlag(Main, tok), "docs/verdicts.md: %s: servegate compare has no flag %s", line, tok)
			case "servegate gate":
				assert.True(t, takesFlag(gate.Main, tok), "docs/verdicts.md: %s: servegate gate has no flag %s", line, tok)
			case "ci/compare.sh":
				// ci/compare.sh hands its flags to servegate compare.
				assert.True(t, takesFlag(Main, tok), "docs/verdicts.md: %s: servegate compare has no flag %s", line, tok)
			}
		}
		if cmd == "go test" {
			checkGoTest(t, rest)
		}
	}
	for _, cmd := range []string{"servegate compare", "servegate gate", "go test"} {
		assert.Positive(t, counts[cmd], "no %s command found in docs/verdicts.md: the pattern no longer matches", cmd)
	}
}

// takesFlag reports whether a command's Main parses flag: given it with
// a value and -h, it prints its usage instead of "not defined".
func takesFlag(main func(context.Context, []string, io.Writer, io.Writer) int, flag string) bool {
	var stderr bytes.Buffer
	main(context.Background(), []string{"-" + strings.TrimLeft(flag, "-") + "=1", "-h"}, &bytes.Buffer{}, &stderr)
	return !strings.Contains(stderr.String(), "flag provided but not defined")
}

// checkGoTest checks that the tests a "go test ./pkg/ -run 'A|B/sub'"
// command names are declared in pkg's test files.
func checkGoTest(t *testing.T, args string) {
	fields := strings.Fields(args)
	require.NotEmpty(t, fields)
	pkg := fields[0]
	run := runFlag.FindStringSubmatch(args)
	if !assert.NotNil(t, run, "docs/verdicts.md: go test%s: no -run 'pattern'", args) {
		return
	}
	files, err := filepath.Glob(filepath.Join("../..", pkg, "*_test.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "docs/verdicts.md: go test%s: no test files in %s", args, pkg)
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src.Write(b)
	}
	for alt := range strings.SplitSeq(run[1], "|") {
		name, _, _ := strings.Cut(alt, "/")
		name = strings.Trim(name, "^$")
		assert.True(t, strings.Contains(src.String(), "\nfunc "+name+"(t *testing.T)"),
			"docs/verdicts.md: go test%s: no test %s in %s", args, name, pkg)
	}
}
