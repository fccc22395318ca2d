package site

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

	"github.com/servegate/servegate/internal/store"
)

// TestHostileNames: scenario names and a title carrying markup are
// written as text, never as markup.
func TestHostileNames(t *testing.T) {
	st, err := store.Create(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evil := `<img/src=x/onerror=alert(1)>"'&`
	for i := range 8 {
		f := filepath.Join(t.TempDir(), "test.benchfmt")
		body := fmt.Sprintf("scenario-sha: a\nBenchmarkScenarios/scenario=%s 1 %g ttft-p99-sec 0 fail-ratio 20 goodput-req/s\n", evil, 0.03+0.001*float64(i%2))
		require.NoError(t, os.WriteFile(f, []byte(body), 0o644))
		_, err := st.Add(context.Background(), store.AddRequest{Commit: commitID(i), CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: "cpu4", Files: []string{f}})
		require.NoError(t, err)
	}
	out := filepath.Join(t.TempDir(), "site")
	sum, err := Write(context.Background(), Config{Store: st, Out: out, Title: "<script>alert(2)</script>", CommitURL: `https://e.com/{commit}?a="b"`})
	require.NoError(t, err)
	for _, p := range sum.Pages {
		body := read(t, out, p)
		assert.NotContains(t, body, "<img", p)
		assert.NotContains(t, body, "<script", p)
		assert.NotContains(t, body, `"b"`, p)
		assert.True(t, strings.Contains(body, "&lt;img/src=x/onerror=alert(1)&gt;") || p == "index.html" && strings.Contains(body, "&lt;img"), p)
	}
}
