package gate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistorySimulator runs change-point mode on real measurements: 16
// "commits" of the in-process simulator, three runs each as a CI job on
// main would write them, where every step got 20% slower from the ninth
// commit on (the slowdown knob). History must name that commit (or a
// neighbour, when noise blurs the edge) as a regression. About 10 s;
// skipped under -short.
func TestHistorySimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("real simulator runs; skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := simulatorRun(t)
	dir := t.TempDir()
	const commits, slowFrom, slowdown = 16, 8, 1.20
	for i := range commits {
		s := 1.0
		if i >= slowFrom {
			s = slowdown
		}
		var b strings.Builder
		fmt.Fprintf(&b, "commit: c%02d\ntarget: inproc\n", i+1)
		for range 3 {
			m, err := run(ctx, s)
			require.NoError(t, err)
			fmt.Fprintf(&b, "BenchmarkScenario/scenario=accuracy 1 %g ttft-p99-sec %g fail-ratio %g goodput-req/s\n", m["ttft-p99-sec"], m["fail-ratio"], m["goodput-req/s"])
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.benchfmt", i+1)), []byte(b.String()), 0o644))
	}
	rep, err := RunHistory(dir, DefaultPolicy(), historyAlpha)
	require.NoError(t, err)
	var buf strings.Builder
	require.NoError(t, rep.WriteText(&buf))
	t.Logf("load average %s\n%s", loadAverage(), buf.String())
	assert.Equal(t, Fail, rep.Verdict)
	for _, s := range rep.Series {
		if s.Unit != "ttft-p99-sec" {
			continue
		}
		require.NotEmpty(t, s.Changes, "the 20% step was not found")
		last := s.Changes[len(s.Changes)-1]
		assert.Contains(t, []string{"c08", "c09", "c10"}, last.Commit)
		assert.Equal(t, changeRegression, last.Kind)
	}
}
