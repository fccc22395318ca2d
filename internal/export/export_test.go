package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// smallStore is a store of five commits: two scenarios, two runs each;
// commit c2's chat run is interrupted, c3 has no "other" scenario, and c1
// ran an older version of chat.
func smallStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t0 := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= 5; i++ {
		var b bytes.Buffer
		sha := "chat-v2"
		if i == 1 {
			sha = "chat-v1"
		}
		fmt.Fprintf(&b, "target: inproc\nscenario-sha: %s\n", sha)
		if i == 2 {
			b.WriteString("interrupted: true\n")
		}
		for r := range 2 {
			fmt.Fprintf(&b, "BenchmarkScenarios/scenario=chat 1 %g ttft-p99-sec %g goodput-req/s\n", 0.030+0.001*float64(i)+0.0005*float64(r), 20-0.5*float64(r))
		}
		b.WriteString("interrupted: false\n")
		if i != 3 {
			fmt.Fprintf(&b, "scenario-sha: other-v1\n")
			for r := range 2 {
				fmt.Fprintf(&b, "BenchmarkScenarios/scenario=other 1 %g ttft-p99-sec\n", 0.050+0.002*float64(r))
			}
		}
		f := filepath.Join(t.TempDir(), "test.benchfmt")
		require.NoError(t, os.WriteFile(f, b.Bytes(), 0o644))
		_, err := st.Add(context.Background(), store.AddRequest{Commit: fmt.Sprintf("c%d", i), CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: "cpu4", Files: []string{f}})
		require.NoError(t, err)
	}
	return st
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), string(got))
}

func TestBMF(t *testing.T) {
	pts, _, err := Load(smallStore(t), "")
	require.NoError(t, err)
	require.Len(t, pts, 5)
	var b bytes.Buffer
	require.NoError(t, WriteBMF(&b, pts[len(pts)-1]))
	golden(t, "c5.bmf.json", b.Bytes())

	// The shape of https://bencher.dev/bmf.json: an object of benchmark
	// names, each an object of measures, each an object with a number
	// "value" and optional number "lower_value" and "upper_value", and
	// nothing else.
	var doc map[string]map[string]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	require.NotEmpty(t, doc)
	for bench, measures := range doc {
		require.NotEmpty(t, bench)
		for name, m := range measures {
			require.NotEmpty(t, name)
			require.Contains(t, m, "value")
			for k, v := range m {
				assert.Contains(t, []string{"value", "lower_value", "upper_value"}, k)
				var f float64
				assert.NoError(t, json.Unmarshal(v, &f), "%s/%s/%s is no number", bench, name, k)
			}
		}
	}
	m := doc["Scenarios/scenario=chat"]["ttft-p99-sec"]
	assert.JSONEq(t, `0.03525`, string(m["value"]))
}

func TestCSV(t *testing.T) {
	pts, _, err := Load(smallStore(t), "cpu4")
	require.NoError(t, err)
	var b bytes.Buffer
	cols, notes, err := WriteCSV(&b, pts, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"chat.goodput-req/s", "chat.ttft-p99-sec", "other.ttft-p99-sec"}, cols)
	assert.Equal(t, []string{
		"commit c1 ran another version of Scenarios/scenario=chat: left out",
		"commit c2 has no goodput-req/s of Scenarios/scenario=chat: left out",
		"commit c3 has no ttft-p99-sec of Scenarios/scenario=other: left out",
	}, notes)
	golden(t, "cpu4.otava.csv", b.Bytes())
	checkOtava(t, b.Bytes(), cols)

	b.Reset()
	cols, _, err = WriteCSV(&b, pts, "Scenarios/scenario=chat")
	require.NoError(t, err)
	assert.Equal(t, []string{"goodput-req/s", "ttft-p99-sec"}, cols)
	checkOtava(t, b.Bytes(), cols)
	_, _, err = WriteCSV(&b, pts, "Scenarios/scenario=nope")
	assert.ErrorContains(t, err, `no benchmark "Scenarios/scenario=nope"`)
}

// checkOtava reads a CSV the way Otava's CsvImporter does
// (otava/importer.py): a header with the time column and every metric
// column, every row at least as long as the header, a float in every
// metric cell.
func checkOtava(t *testing.T, data []byte, metrics []string) {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	require.NoError(t, err)
	require.Greater(t, len(rows), 1)
	header := rows[0]
	index := map[string]int{}
	for i, h := range header {
		index[h] = i
	}
	require.Contains(t, index, "time")
	require.Contains(t, index, "commit")
	for _, row := range rows[1:] {
		require.GreaterOrEqual(t, len(row), len(header))
		_, err := time.Parse("2006-01-02 15:04:05 -0700", row[index["time"]])
		require.NoError(t, err)
		for _, m := range metrics {
			require.Contains(t, index, m)
			_, err := strconv.ParseFloat(row[index[m]], 64)
			require.NoError(t, err, "%s in %v", m, row)
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	_, _, err = Load(st, "")
	assert.ErrorContains(t, err, "holds no runs yet")
}

// TestCSVColumnsUnique: two benchmarks of one scenario (a scenario run
// and its capacity sweep, say) reporting one unit get two columns of
// different names; Otava keys metrics by column name, so a repeated name
// would chart one benchmark's figures as the other's.
func TestCSVColumnsUnique(t *testing.T) {
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t0 := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= 2; i++ {
		f := filepath.Join(t.TempDir(), "test.benchfmt")
		body := fmt.Sprintf("BenchmarkScenarios/scenario=chat 1 %d tok/s\nBenchmarkCapacity/scenario=chat 1 %d tok/s\n", 100+i, 900+i)
		require.NoError(t, os.WriteFile(f, []byte(body), 0o644))
		_, err := st.Add(context.Background(), store.AddRequest{Commit: fmt.Sprintf("c%d", i), CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: "cpu4", Files: []string{f}})
		require.NoError(t, err)
	}
	pts, _, err := Load(st, "cpu4")
	require.NoError(t, err)
	var b bytes.Buffer
	cols, _, err := WriteCSV(&b, pts, "")
	require.NoError(t, err)
	rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, h := range rows[0] {
		assert.False(t, seen[h], "column %q twice in %v", h, rows[0])
		seen[h] = true
	}
	require.Len(t, cols, 2)
	checkOtava(t, b.Bytes(), cols)
	// Each column holds its own benchmark's figures.
	for i, c := range cols {
		want := "102"
		if strings.Contains(c, "Capacity") {
			want = "902"
		}
		assert.Equal(t, want, rows[2][2+i], c)
	}
}

// TestCSVNamesNeverFormulas: scenario names a spreadsheet would run as
// formulas are written after a single quote; negative figures are not
// touched.
func TestCSVNamesNeverFormulas(t *testing.T) {
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t0 := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	names := []string{`=HYPERLINK("evil.example")`, "+cmd|calc", "-2+3", "@SUM(A1)", "plain"}
	for i := 1; i <= 2; i++ {
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "BenchmarkScenarios/scenario=%s 1 -%d delta-ms\n", strings.ReplaceAll(n, " ", ""), i)
		}
		f := filepath.Join(t.TempDir(), "test.benchfmt")
		require.NoError(t, os.WriteFile(f, []byte(b.String()), 0o644))
		_, err := st.Add(context.Background(), store.AddRequest{Commit: fmt.Sprintf("c%d", i), CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: "cpu4", Files: []string{f}})
		require.NoError(t, err)
	}
	pts, _, err := Load(st, "cpu4")
	require.NoError(t, err)
	var b bytes.Buffer
	cols, _, err := WriteCSV(&b, pts, "")
	require.NoError(t, err)
	rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	require.NoError(t, err)
	for _, h := range rows[0] {
		assert.NotContains(t, "=+-@", h[:1], "header %q", h)
	}
	assert.Contains(t, rows[0], `'=HYPERLINK("evil.example").delta-ms`)
	assert.Contains(t, rows[0], "plain.delta-ms")
	assert.Equal(t, "-2", rows[2][2], "a figure keeps its sign")
	checkOtava(t, b.Bytes(), cols)
}
