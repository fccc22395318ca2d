package site

import (
	"context"
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/store"
)

// A synth describes a synthetic store: scenarios × commits, three runs
// each, p99 TTFT around 30 ms with 2% noise per run, goodput around 20
// req/s, and a step of the given size in every step scenario's TTFT
// from commit stepAt on.
type synth struct {
	scenarios, commits int
	stepAt             int
	step               float64
	stepScenarios      int      // the first stepScenarios scenarios get the step
	names              []string // the scenarios' names; default scn-00, scn-01, ...
}

// name is scenario s's name.
func (sy synth) name(s int) string {
	if s < len(sy.names) {
		return sy.names[s]
	}
	return fmt.Sprintf("scn-%02d", s)
}

// commitID is commit i's hash-like name.
func commitID(i int) string { return fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprint(i)))) }

// build writes the store under dir and returns it.
func (sy synth) build(tb testing.TB, dir string) *store.Store {
	tb.Helper()
	st, err := store.Create(dir)
	require.NoError(tb, err)
	rng := rand.New(rand.NewPCG(7, 7))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tmp := tb.TempDir()
	for i := range sy.commits {
		var b strings.Builder
		b.WriteString("target: inproc\n")
		for s := range sy.scenarios {
			ttft := 0.030 * (1 + 0.1*float64(s))
			if s < sy.stepScenarios && i >= sy.stepAt {
				ttft *= 1 + sy.step
			}
			fmt.Fprintf(&b, "scenario-sha: sha%02d\n", s)
			for range 3 {
				fmt.Fprintf(&b, "BenchmarkScenarios/scenario=%s 1 %.6f ttft-p99-sec 0 fail-ratio %.4f goodput-req/s\n", sy.name(s), ttft*(1+0.02*rng.NormFloat64()), 20*(1+0.01*rng.NormFloat64()))
			}
		}
		f := filepath.Join(tmp, "test.benchfmt")
		require.NoError(tb, os.WriteFile(f, []byte(b.String()), 0o644))
		_, err := st.Add(context.Background(), store.AddRequest{Commit: commitID(i), CommitTime: t0.Add(time.Duration(i) * time.Hour), Runner: "cpu4", Version: "test", Files: []string{f}})
		require.NoError(tb, err)
	}
	return st
}
