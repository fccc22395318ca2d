package gate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/store"
)

// addRun adds one run of commit to st on runner: valid result lines of
// the chat scenario at scenario version sha, and refused ones (marked
// invalid) after them.
func addRun(t *testing.T, st *store.Store, runner, commit, sha string, valid, refused int) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "target: inproc\nscenario-sha: %s\n", sha)
	for range valid {
		b.WriteString("BenchmarkScenarios/scenario=chat 1 0.033 ttft-p99-sec 0 fail-ratio\n")
	}
	if refused > 0 {
		b.WriteString("invalid: true\n")
		for range refused {
			b.WriteString("BenchmarkScenarios/scenario=chat 1 0.090 ttft-p99-sec 0.5 fail-ratio\n")
		}
	}
	f := filepath.Join(t.TempDir(), "test.benchfmt")
	require.NoError(t, os.WriteFile(f, []byte(b.String()), 0o644))
	_, err := st.Add(context.Background(), store.AddRequest{Commit: commit, CommitTime: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), Runner: runner, Files: []string{f}})
	require.NoError(t, err)
}

// TestCheckBaselineFailsClosed: every reason a stored baseline cannot
// serve is an error naming it; a good one is returned.
func TestCheckBaselineFailsClosed(t *testing.T) {
	const chat = "Scenarios/scenario=chat"
	tests := []struct {
		name   string
		fill   func(t *testing.T, st *store.Store)
		runner string
		head   map[string]string
		need   int
		want   string // "" for success
	}{
		{"good", func(t *testing.T, st *store.Store) { addRun(t, st, "cpu2", "a1", "v1", 4, 0) }, "cpu2", map[string]string{chat: "v1"}, 3, ""},
		{"another runner type", func(t *testing.T, st *store.Store) { addRun(t, st, "cpu4", "a1", "v1", 4, 0) }, "cpu2",
			map[string]string{chat: "v1"}, 3, "no runs of runner type cpu2 (it has: cpu4)"},
		{"another scenario version", func(t *testing.T, st *store.Store) { addRun(t, st, "cpu2", "a1", "v1", 4, 0) }, "cpu2",
			map[string]string{chat: "v2"}, 3, "ran another version of the scenario"},
		{"invalid runs", func(t *testing.T, st *store.Store) { addRun(t, st, "cpu2", "a1", "v1", 4, 2) }, "cpu2",
			map[string]string{chat: "v1"}, 3, "invalid or interrupted result line(s)"},
		{"too few runs", func(t *testing.T, st *store.Store) { addRun(t, st, "cpu2", "a1", "v1", 2, 0) }, "cpu2",
			map[string]string{chat: "v1"}, 3, "has 2 valid run(s), the test needs 3"},
		{"no baseline of the benchmark", func(t *testing.T, st *store.Store) { addRun(t, st, "cpu2", "a1", "v1", 4, 0) }, "cpu2",
			map[string]string{"Scenarios/scenario=other": "v1"}, 3, "no baseline on runner type cpu2"},
		{"head without a version", func(t *testing.T, st *store.Store) { addRun(t, st, "cpu2", "a1", "v1", 4, 0) }, "cpu2",
			map[string]string{chat: ""}, 3, "carry no scenario-sha"},
		{"empty head", func(t *testing.T, st *store.Store) { addRun(t, st, "cpu2", "a1", "v1", 4, 0) }, "cpu2",
			map[string]string{}, 3, "no benchmark"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := store.Create(filepath.Join(t.TempDir(), "store"))
			require.NoError(t, err)
			tt.fill(t, st)
			got, err := CheckBaseline(st, tt.runner, tt.head, tt.need)
			if tt.want == "" {
				require.NoError(t, err)
				require.Equal(t, "a1", got[chat].ID)
				return
			}
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, got)
		})
	}
}
