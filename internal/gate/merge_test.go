package gate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shardReports gates a crafted case as two shard jobs would, one
// scenario each, and returns their -json reports.
func shardReports(t *testing.T, name string, holm bool) []ShardReport {
	t.Helper()
	var out []ShardReport
	for _, sc := range []string{"chat-poisson", "burst"} {
		pol := DefaultPolicy()
		pol.Holm = holm
		files := pair(name)
		rep, _ := Run(context.Background(), Config{Base: files[:1], Head: files[1:], Policy: pol, Filter: "/scenario:" + sc})
		require.NotNil(t, rep)
		var b bytes.Buffer
		require.NoError(t, rep.WriteJSON(&b))
		out = append(out, ShardReport{Name: "shard-" + sc + "/gate.json", Data: b.Bytes()})
	}
	return out
}

// unsharded gates a crafted case in one job.
func unsharded(t *testing.T, name string, holm bool) *Report {
	t.Helper()
	pol := DefaultPolicy()
	pol.Holm = holm
	files := pair(name)
	rep, _ := Run(context.Background(), Config{Base: files[:1], Head: files[1:], Policy: pol})
	require.NotNil(t, rep)
	return rep
}

// TestMergeReportsMatchesUnsharded checks that two shards' reports merge
// into the verdict, rows and p-values of one job gating everything,
// including the Holm correction, which the merge applies again over all
// shards' rows.
func TestMergeReportsMatchesUnsharded(t *testing.T) {
	for _, tc := range []struct {
		name string
		holm bool
		want Verdict
	}{
		{"regression", false, Fail},
		{"regression", true, Fail},
		{"noise", false, Pass},
		{"improvement", true, Pass},
		{"foursamples", false, Fail},
		{"foursamples", true, Error}, // 4 runs cannot reach alpha/4: the shards alone (alpha/2) could
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := unsharded(t, tc.name, tc.holm)
			m := MergeReports(shardReports(t, tc.name, tc.holm), 2)
			assert.Equal(t, tc.want, whole.Verdict)
			assert.Equal(t, whole.Verdict, m.Verdict, "errors: %v", m.Errors)
			require.Len(t, m.Comparisons, len(whole.Comparisons))
			rows := map[string]*Comparison{}
			for _, c := range m.Comparisons {
				rows[rowKey(c)] = c
			}
			for _, w := range whole.Comparisons {
				c, ok := rows[rowKey(w)]
				require.True(t, ok, "row %s %s", w.Benchmark, w.Unit)
				assert.Equal(t, w.Verdict, c.Verdict, "%s %s", w.Benchmark, w.Unit)
				if whole.Verdict == Error {
					continue // a shard in error is not judged again
				}
				assert.InDelta(t, w.PAdjusted, c.PAdjusted, 1e-12, "%s %s", w.Benchmark, w.Unit)
			}
		})
	}
}

// TestMergeReportsFailsClosed: a missing, duplicated, broken or failed
// shard makes the merged verdict an error, never a pass.
func TestMergeReportsFailsClosed(t *testing.T) {
	good := shardReports(t, "noise", false)
	require.Equal(t, Pass, MergeReports(good, 2).Verdict)
	edit := func(p ShardReport, old, new string) ShardReport {
		require.Contains(t, string(p.Data), old)
		return ShardReport{Name: p.Name, Data: []byte(strings.Replace(string(p.Data), old, new, 1))}
	}
	for _, tc := range []struct {
		name   string
		parts  []ShardReport
		shards int
		err    string
	}{
		{"missing shard", good[:1], 2, "1 shard reports for -shards 2"},
		{"no -shards", good, 0, "-merge needs -shards N"},
		{"same shard twice", []ShardReport{good[0], good[0]}, 2, "is in both shard-chat-poisson/gate.json and shard-chat-poisson/gate.json"},
		{"shard in error", append(good[:1:1], shardReports(t, "fewsamples", false)[1]), 2, "shard-burst/gate.json: too few samples"},
		{"not json", []ShardReport{good[0], {Name: "x.json", Data: []byte("gate: PASS")}}, 2, "x.json: not a gate -json report"},
		{"not a report", []ShardReport{good[0], {Name: "x.json", Data: []byte(`{"completed": 3}`)}}, 2, `x.json: not a gate -json report: json: unknown field "completed"`},
		{"bad verdict", []ShardReport{good[0], edit(good[1], `"verdict": "pass"`, `"verdict": "ok"`)}, 2, `verdict "ok" is not pass, fail or error`},
		{"verdict against rows", []ShardReport{good[0], edit(edit(good[1], `"verdict": "pass",
  "alpha"`, `"verdict": "pass",
  "alpha"`), `"verdict": "pass",
      "reason"`, `"verdict": "fail",
      "reason"`)}, 2, "verdict pass, but its rows and errors say fail"},
		{"empty shard", []ShardReport{good[0], {Name: "e.json", Data: []byte(`{"verdict": "pass", "alpha": 0.05, "confidence": 0.95, "holm": false, "comparisons": []}`)}}, 2, "e.json: pass with no comparisons"},
		{"other alpha", []ShardReport{good[0], edit(good[1], `"alpha": 0.05,
  "confidence"`, `"alpha": 0.01,
  "confidence"`)}, 2, "the shards ran different gates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := MergeReports(tc.parts, tc.shards)
			assert.Equal(t, Error, m.Verdict)
			assert.Equal(t, ExitBadInput, m.ExitCode())
			assert.Contains(t, strings.Join(m.Errors, "\n"), tc.err)
		})
	}
}

// TestMainMerge runs `servegate gate -merge` on shard files: one Markdown
// report naming every shard's rows, and the exit status of the verdict.
func TestMainMerge(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, p := range shardReports(t, "regression", false) {
		f := filepath.Join(dir, strings.ReplaceAll(p.Name, "/", "-"))
		require.NoError(t, os.WriteFile(f, p.Data, 0o644))
		files = append(files, f)
	}
	md := filepath.Join(dir, "gate.md")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"-merge", "-shards", "2", "-markdown", md}, files...), &stdout, &stderr)
	assert.Equal(t, ExitRegression, code, stderr.String())
	assert.Contains(t, stdout.String(), "gate: FAIL")
	page, err := os.ReadFile(md)
	require.NoError(t, err)
	for _, want := range []string{"servegate gate: FAIL", "scenario=chat-poisson", "scenario=burst", "merged 2 shard reports"} {
		assert.Contains(t, string(page), want)
	}

	stdout.Reset()
	stderr.Reset()
	code = Main(context.Background(), append([]string{"-merge", "-shards", "3"}, append(files, filepath.Join(dir, "shard-3-gate.json"))...), &stdout, &stderr)
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, stderr.String(), "shard-3-gate.json: no such file")
	assert.Contains(t, stdout.String(), "gate: ERROR")
}
