package gate

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchstatRow is one data row of "benchstat -format csv base head".
type benchstatRow struct {
	unit, name           string
	baseCenter, baseCI   string
	headCenter, headCI   string
	vsBase, pAndN        string
	hasBase, hasHead     bool
	baseValue, headValue float64
}

// runBenchstat runs the real benchstat (golang.org/x/perf/cmd/benchstat,
// a tool of this module: go tool benchstat) and parses its CSV tables.
func runBenchstat(tb testing.TB, extra []string, base, head string) []benchstatRow {
	tb.Helper()
	args := append(append([]string{"tool", "benchstat", "-format", "csv"}, extra...), base, head)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(tb, err, "go %s: %s", strings.Join(args, " "), stderr.String())

	r := csv.NewReader(bytes.NewReader(out))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	require.NoError(tb, err)
	var rows []benchstatRow
	unit := ""
	for _, rec := range recs {
		if len(rec) == 1 {
			continue // "goos: linux" configuration lines
		}
		for len(rec) < 7 {
			rec = append(rec, "") // a row with one side only
		}
		switch {
		case rec[0] == "" && rec[2] == "CI":
			unit = rec[1]
		case rec[0] == "" || rec[0] == "geomean":
		default:
			row := benchstatRow{unit: unit, name: rec[0], baseCenter: rec[1], baseCI: rec[2], headCenter: rec[3], headCI: rec[4], vsBase: rec[5], pAndN: rec[6]}
			row.hasBase, row.hasHead = rec[1] != "", rec[3] != ""
			if row.hasBase {
				row.baseValue, err = strconv.ParseFloat(rec[1], 64)
				require.NoError(tb, err)
			}
			if row.hasHead {
				row.headValue, err = strconv.ParseFloat(rec[3], 64)
				require.NoError(tb, err)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// TestAgreesWithBenchstat runs benchstat and the gate on the same crafted
// files and checks that they see the same rows, in the same order, with
// the same medians, confidence ranges, direction of change and p-values.
func TestAgreesWithBenchstat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchstat")
	}
	for _, name := range []string{"regression", "noise", "improvement", "within", "foursamples", "fewsamples", "gotest", "mismatched"} {
		t.Run(name, func(t *testing.T) {
			files := pair(name)
			want := runBenchstat(t, nil, files[0], files[1])
			rep, _ := Run(context.Background(), Config{Base: files[:1], Head: files[1:]})
			require.NotNil(t, rep)
			require.Len(t, rep.Comparisons, len(want))
			for i, w := range want {
				c := rep.Comparisons[i]
				label := fmt.Sprintf("row %d %s %s", i, w.unit, w.name)
				assert.Equal(t, w.unit, c.Unit, label)
				assert.Equal(t, w.name, c.Benchmark, label)
				require.Equal(t, w.hasBase, c.Base != nil, label)
				require.Equal(t, w.hasHead, c.Head != nil, label)
				if c.Base != nil {
					assert.Equal(t, w.baseValue, c.Base.Center, label)
					assert.Equal(t, w.baseCI, c.Base.Range, label)
				}
				if c.Head != nil {
					assert.Equal(t, w.headValue, c.Head.Center, label)
					assert.Equal(t, w.headCI, c.Head.Range, label)
				}
				if c.Base == nil || c.Head == nil {
					assert.Empty(t, w.vsBase, label)
					continue
				}
				// benchstat's "vs base" is "~" or the signed change; the
				// gate's text column renders the same from its P and Delta.
				assert.Equal(t, w.vsBase, strings.SplitN(vsBase(c), " (", 2)[0], label)
				assert.Equal(t, w.pAndN, fmt.Sprintf("p=%0.3f n=%d", c.P, c.Base.N), label)
				assert.Equal(t, w.vsBase == "~", !c.Significant, label)
				if w.vsBase != "~" {
					assert.Equal(t, w.vsBase[0] == '+', c.Delta > 0, "direction of %s", label)
				}
			}
		})
	}
}

// TestAgreesWithBenchstatAlpha checks that -alpha means the same to both.
func TestAgreesWithBenchstatAlpha(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchstat")
	}
	files := pair("within")
	want := runBenchstat(t, []string{"-alpha", "0.001"}, files[0], files[1])
	pol := DefaultPolicy()
	pol.Alpha = 0.001
	rep, err := Run(context.Background(), Config{Base: files[:1], Head: files[1:], Policy: pol})
	require.NoError(t, err)
	significant := 0
	for i, w := range want {
		assert.Equal(t, w.vsBase == "~", !rep.Comparisons[i].Significant, "%s %s", w.unit, w.name)
		if w.vsBase != "~" {
			significant++
		}
	}
	assert.Positive(t, significant, "the case should keep at least one significant row at alpha 0.001")
}
