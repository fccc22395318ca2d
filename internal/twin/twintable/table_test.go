package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeJSON writes v as JSON to dir/name.
func writeJSON(tb testing.TB, dir, name string, v any) {
	tb.Helper()
	b, err := json.Marshal(v)
	require.NoError(tb, err)
	require.NoError(tb, os.WriteFile(filepath.Join(dir, name), b, 0o644))
}

// figures is a result with every figure scaled by k from a base.
func figures(k float64) map[string]any {
	return map[string]any{"median_ttft_ms": 50 * k, "p90_ttft_ms": 100 * k, "median_tpot_ms": 20 * k, "output_throughput": 300 * k}
}

// TestRun drives the command on files: a prediction within the tolerance
// passes, one outside fails, and a missing file or figure is an invalid
// comparison (exit 2), never a pass.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		a, b      float64 // predicted/measured ratio of the two scenarios
		capPred   float64 // predicted capacity (measured is 10)
		drop      string  // a figure removed from b's prediction
		noPredict bool    // b has no prediction file
		want      int
		wantOut   string
	}{
		{name: "close", a: 1.05, b: 0.93, capPred: 10.5, want: 0, wantOut: "goal MET"},
		{name: "figures off", a: 1.2, b: 0.8, capPred: 10, want: 1, wantOut: "goal MISSED"},
		{name: "capacity off", a: 1, b: 1, capPred: 12, want: 1, wantOut: "capacity_crossing_rate | 20.0% | ≤ 10%: MISSED"},
		{name: "figure missing", a: 1, b: 1, capPred: 10, drop: "p90_ttft_ms", want: 2},
		{name: "prediction missing", a: 1, b: 1, capPred: 10, noPredict: true, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meas, pred := t.TempDir(), t.TempDir()
			writeJSON(t, meas, "ho-a.test.1.json", figures(3)) // an older run, superseded
			writeJSON(t, meas, "ho-a.test.2.json", figures(1))
			writeJSON(t, meas, "ho-b.test.1.json", figures(2))
			writeJSON(t, pred, "ho-a.json", figures(tc.a))
			b := figures(2 * tc.b)
			delete(b, tc.drop)
			if !tc.noPredict {
				writeJSON(t, pred, "ho-b.json", b)
			}
			writeJSON(t, meas, "cap.test.1.json", map[string]any{"max_goodput_rate": 9.0, "capacity": map[string]any{"crossing_rate": 10.0}})
			writeJSON(t, pred, "cap.json", map[string]any{"max_goodput_rate": 9.0, "capacity": map[string]any{"crossing_rate": tc.capPred}})
			var out, errOut bytes.Buffer
			code := run([]string{"-measured", meas, "-predicted", pred, "-capacity", "cap", "ho-a", "ho-b"}, &out, &errOut)
			assert.Equal(t, tc.want, code, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
			assert.Contains(t, out.String(), tc.wantOut)
			if tc.want == 2 {
				assert.NotEmpty(t, errOut.String(), "an invalid comparison says why")
				assert.NotContains(t, out.String(), "goal MET")
			}
		})
	}
}

// TestCompare checks the arithmetic: signed errors per row, the median of
// the absolute errors per figure, and the capacity falling back to
// max_goodput_rate when one side has no crossing.
func TestCompare(t *testing.T) {
	meas, pred := t.TempDir(), t.TempDir()
	for i, k := range []float64{1.1, 0.7, 1.0} {
		name := []string{"x", "y", "z"}[i]
		writeJSON(t, meas, name+".test.1.json", figures(1))
		writeJSON(t, pred, name+".json", figures(k))
	}
	writeJSON(t, meas, "cap.test.1.json", map[string]any{"max_goodput_rate": 8.0, "capacity": map[string]any{"crossing_rate": 9.0}})
	writeJSON(t, pred, "cap.json", map[string]any{"max_goodput_rate": 6.0})
	v, err := Compare([]string{meas}, pred, []string{"x", "y", "z"}, "cap", 0.1)
	require.NoError(t, err)
	require.Len(t, v.Rows, 3*len(Figures))
	assert.InDelta(t, 0.1, v.Rows[0].Err(), 1e-9)
	assert.InDelta(t, -0.3, v.Rows[len(Figures)].Err(), 1e-9)
	for _, f := range Figures {
		assert.InDelta(t, 0.1, v.MedianAbsErr[f], 1e-9, f) // |errors| 0.1, 0.3, 0: median 0.1
	}
	require.NotNil(t, v.Capacity)
	assert.Equal(t, "capacity_max_goodput_rate", v.Capacity.Figure)
	assert.InDelta(t, -0.25, v.Capacity.Err(), 1e-9)
	assert.False(t, v.Met(), "capacity 25% off")
	var out bytes.Buffer
	v.Write(&out)
	assert.Equal(t, 1, strings.Count(out.String(), "goal MISSED"))
}

// TestCompareMedianOfChecks: with several measured directories each
// figure is their median, so one outlying check does not decide.
func TestCompareMedianOfChecks(t *testing.T) {
	pred := t.TempDir()
	writeJSON(t, pred, "x.json", figures(1))
	writeJSON(t, pred, "cap.json", map[string]any{"max_goodput_rate": 10.0, "capacity": map[string]any{"crossing_rate": 10.5}})
	var dirs []string
	for _, k := range []float64{1.02, 1.6, 0.97} {
		d := t.TempDir()
		writeJSON(t, d, "x.test.1.json", figures(k))
		writeJSON(t, d, "cap.test.1.json", map[string]any{"max_goodput_rate": 10 * k, "capacity": map[string]any{"crossing_rate": 10.5 * k}})
		dirs = append(dirs, d)
	}
	v, err := Compare(dirs, pred, []string{"x"}, "cap", 0.1)
	require.NoError(t, err)
	assert.InDelta(t, 50*1.02, v.Rows[0].Measured, 1e-9, "the median of 1.02, 1.6, 0.97")
	assert.InDelta(t, 10.5*1.02, v.Capacity.Measured, 1e-9)
	assert.Equal(t, "capacity_crossing_rate", v.Capacity.Figure)
	assert.True(t, v.Met())

	// A check whose file lacks the crossing makes both sides use the
	// highest passing rate.
	writeJSON(t, dirs[1], "cap.test.2.json", map[string]any{"max_goodput_rate": 11.0})
	v, err = Compare(dirs, pred, []string{"x"}, "cap", 0.1)
	require.NoError(t, err)
	assert.Equal(t, "capacity_max_goodput_rate", v.Capacity.Figure)
	assert.InDelta(t, 10.2, v.Capacity.Measured, 1e-9)
}

// TestRepeat: three sessions whose figures are 1, 1.1 and 1.3 times a
// base; each is compared with the median of the other two, so the errors
// are exact: the median 1.2 against session 1 (+20%), 1.15 against
// session 2 (+4.5%), 1.05 against session 3 (−19.2%), on every figure and
// the capacity. Fewer than three sessions is exit 2.
func TestRepeat(t *testing.T) {
	var dirs []string
	for _, k := range []float64{1, 1.1, 1.3} {
		d := t.TempDir()
		writeJSON(t, d, "ho-a.test.1.json", figures(k))
		writeJSON(t, d, "ho-b.test.1.json", figures(2*k))
		writeJSON(t, d, "cap.test.1.json", map[string]any{"capacity": map[string]any{"crossing_rate": 10 * k}})
		dirs = append(dirs, d)
	}
	r, err := Repeat(dirs, []string{"ho-a", "ho-b"}, "cap", 0.1)
	require.NoError(t, err)
	want := []float64{0.2, 0.05 / 1.1, -0.25 / 1.3}
	for j, v := range r.Verdicts {
		for _, f := range Figures {
			assert.InDelta(t, math.Abs(want[j]), v.MedianAbsErr[f], 1e-9, "session %d %s", j, f)
		}
		assert.InDelta(t, want[j], v.Capacity.Err(), 1e-9, "session %d capacity", j)
	}
	var out, errOut bytes.Buffer
	args := []string{"-repeat", "-capacity", "cap"}
	for _, d := range dirs {
		args = append(args, "-measured", d)
	}
	require.Equal(t, 0, run(append(args, "ho-a", "ho-b"), &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "| median over sessions | 19.2% | 19.2% | 19.2% | 19.2% | 19.2% |")
	assert.Equal(t, 2, run([]string{"-repeat", "-measured", dirs[0], "-measured", dirs[1], "ho-a"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "at least 3 measured directories")
}

// TestCross: three sessions measured at 1, 1.1 and 1.3 times a base, and
// the twin calibrated from each predicting 1, 1.15 and 1.5 times it. Each
// twin is compared with the median of the other two sessions, so the
// errors are exact: 1 against 1.2 (−16.7%), 1.15 against 1.15 (0), 1.5
// against 1.05 (+42.9%), on every figure and the capacity; the median
// over sessions is 16.7%. Fewer than three sessions, or a prediction
// directory missing for one, is exit 2.
func TestCross(t *testing.T) {
	var meas, pred []string
	for i, k := range []float64{1, 1.1, 1.3} {
		d, p := t.TempDir(), t.TempDir()
		writeJSON(t, d, "ho-a.test.1.json", figures(k))
		writeJSON(t, d, "ho-b.test.1.json", figures(2*k))
		writeJSON(t, d, "cap.test.1.json", map[string]any{"capacity": map[string]any{"crossing_rate": 10 * k}})
		q := []float64{1, 1.15, 1.5}[i]
		writeJSON(t, p, "ho-a.json", figures(q))
		writeJSON(t, p, "ho-b.json", figures(2*q))
		writeJSON(t, p, "cap.json", map[string]any{"capacity": map[string]any{"crossing_rate": 10 * q}})
		meas, pred = append(meas, d), append(pred, p)
	}
	r, err := Cross(meas, pred, []string{"ho-a", "ho-b"}, "cap", 0.1)
	require.NoError(t, err)
	want := []float64{1/1.2 - 1, 0, 1.5/1.05 - 1}
	for j, v := range r.Verdicts {
		for _, f := range Figures {
			assert.InDelta(t, math.Abs(want[j]), v.MedianAbsErr[f], 1e-9, "session %d %s", j, f)
		}
		assert.InDelta(t, want[j], v.Capacity.Err(), 1e-9, "session %d capacity", j)
	}
	var out, errOut bytes.Buffer
	args := []string{"-cross", "-capacity", "cap"}
	for j := range meas {
		args = append(args, "-measured", meas[j], "-predicted", pred[j])
	}
	require.Equal(t, 0, run(append(args, "ho-a", "ho-b"), &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "Across sessions")
	assert.Contains(t, out.String(), "| median over sessions | 16.7% | 16.7% | 16.7% | 16.7% | 16.7% |")
	out.Reset()
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"-cross", "-measured", meas[0], "-predicted", pred[0], "-measured", meas[1], "-predicted", pred[1], "ho-a"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "at least 3 measured directories")
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"-cross", "-measured", meas[0], "-measured", meas[1], "-measured", meas[2], "-predicted", pred[0], "ho-a"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "one -predicted directory per -measured one")
	assert.Empty(t, out.String(), "an invalid comparison prints no table")
}
