package benchtest

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/shard"
)

// Sharding from go test. SERVEGATE_SHARD=i/N splits a suite: RunDir and
// BenchDir run the scenarios shard.Spec.OwnsName gives shard i and show
// the others as skipped subtests. SERVEGATE_LOAD_SHARD=i/N with
// SERVEGATE_START_AT=<RFC 3339> splits each scenario's schedule instead:
// this process sends every N-th request from the start time on, and the
// result JSON says which shard it holds, for `servegate merge`.
//
// Both are environment variables rather than test flags: `go test ./...`
// hands its -args to every package, and one that does not import
// benchtest would stop at an unknown flag.

// suiteShard reads SERVEGATE_SHARD.
func suiteShard() (shard.Spec, error) {
	s, err := shard.Parse(os.Getenv(shard.EnvSuite))
	if err != nil {
		return s, fmt.Errorf("%s: %w", shard.EnvSuite, err)
	}
	return s, nil
}

// shardScenarios says why this process skips each scenario of scs that
// SERVEGATE_SHARD puts on another shard.
func shardScenarios(tb testing.TB, scs []*scenario.Scenario) map[string]string {
	tb.Helper()
	spec, err := suiteShard()
	require.NoError(tb, err)
	skip := map[string]string{}
	for _, sc := range scs {
		if spec.OwnsName(sc.Name) {
			continue
		}
		skip[sc.Name] = fmt.Sprintf("%s=%s: scenario %s is on shard %d/%d", shard.EnvSuite, spec, sc.Name, shard.ShardOf(sc.Name, spec.Count), spec.Count)
	}
	if spec.Enabled() {
		tb.Logf("%s=%s: %d of %d scenarios on this shard", shard.EnvSuite, spec, len(scs)-len(skip), len(scs))
	}
	return skip
}
