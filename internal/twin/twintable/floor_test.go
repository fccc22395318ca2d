package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// floorSessions are the sessions of real vLLM committed as summaries
// (testdata/sessions-20261203/nK: the scalar figures, server_config and
// capacity of each result twin-check.sh measured, without the
// per-request arrays), five server starts of the same image with the
// same scenarios and seeds (docs/twin.md "The floor").
func floorSessions(tb testing.TB) (dirs, held []string) {
	tb.Helper()
	dirs, err := filepath.Glob("testdata/sessions-20261203/n*")
	require.NoError(tb, err)
	require.GreaterOrEqual(tb, len(dirs), 3, "the committed sessions")
	files, err := filepath.Glob(filepath.Join(dirs[0], "twin-ho-*.test.1.json"))
	require.NoError(tb, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".test.1.json")
		if name != floorCapacity {
			held = append(held, name)
		}
	}
	require.GreaterOrEqual(tb, len(held), 5, "the held-out runs of twin/held.yaml")
	return dirs, held
}

const floorCapacity = "twin-ho-capacity"

// TestFloorSessions checks that the committed sessions can be compared:
// every session has every held-out figure and the capacity (a session
// missing one would be an invalid comparison, and the floor quoted in
// docs/twin.md could not be redone).
func TestFloorSessions(t *testing.T) {
	dirs, held := floorSessions(t)
	r, err := Repeat(dirs, held, floorCapacity, 0.10)
	require.NoError(t, err)
	require.Len(t, r.Verdicts, len(dirs))
	for _, v := range r.Verdicts {
		require.NotNil(t, v.Capacity)
		require.Len(t, v.Rows, len(held)*len(Figures))
	}
}

// BenchmarkFloor reports the floor under any twin of real vLLM on this
// machine (docs/twin.md): each committed session against the median of the
// other sessions' measurements, the best prediction there is without a
// model, as the median over sessions of each figure's median |error|
// over the held-out set (and of the capacity's |error|), in percent. A
// goal below one of these figures cannot be met by any twin of this
// server here; twintable -repeat prints the per-session table.
//
//	go test -run '^$' -bench Floor ./internal/twin/twintable/
func BenchmarkFloor(b *testing.B) {
	dirs, held := floorSessions(b)
	var r *Repeatability
	for b.Loop() {
		var err error
		r, err = Repeat(dirs, held, floorCapacity, 0.10)
		require.NoError(b, err)
	}
	for _, f := range r.Columns() {
		b.ReportMetric(100*r.Median(f), "floor-"+strings.ReplaceAll(f, "_", "-")+"-%")
	}
}
