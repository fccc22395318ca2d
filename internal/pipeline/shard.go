package pipeline

import (
	"fmt"
	"os"
	"strconv"
	"time"

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

// ApplyLoadShard reads SERVEGATE_LOAD_SHARD and SERVEGATE_START_AT into
// the plan.
func ApplyLoadShard(p *Plan) error {
	spec, err := shard.Parse(os.Getenv(shard.EnvLoad))
	if err != nil {
		return fmt.Errorf("%s: %w", shard.EnvLoad, err)
	}
	var at time.Time
	if v := os.Getenv(shard.EnvStartAt); v != "" {
		if at, err = ParseStartAt(v); err != nil {
			return fmt.Errorf("%s: %w", shard.EnvStartAt, err)
		}
	}
	if spec.Enabled() && at.IsZero() {
		return fmt.Errorf("%s=%s needs %s: every shard must start at the same moment", shard.EnvLoad, spec, shard.EnvStartAt)
	}
	p.Engine.Shard, p.Engine.StartAt = spec, at
	return nil
}

// maxStartAhead bounds how far ahead a start time may be: further is a
// mistyped date, and the run would hang.
const maxStartAhead = 24 * time.Hour

// ParseStartAt reads a start time in RFC 3339 ("2026-12-01T20:00:00Z",
// fractions of a second allowed) that is at most a day ahead.
func ParseStartAt(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("start time %q: want RFC 3339, e.g. 2026-12-01T20:00:00Z", s)
	}
	if d := time.Until(t); d > maxStartAhead {
		return time.Time{}, fmt.Errorf("start time %s is %v ahead; at most %v", s, d.Round(time.Second), maxStartAhead)
	}
	return t, nil
}

// checkStartAt refuses a plan whose start time has passed before its run
// began: a second scenario (or -count repetition) of a sharded process
// would otherwise start alone, minutes after the others.
func checkStartAt(p *Plan) error {
	at := p.Engine.StartAt
	if at.IsZero() {
		return nil
	}
	if late := time.Since(at); late > 0 {
		return fmt.Errorf("start time %s passed %v before the run began: a sharded run starts all shards at once, so give each run its own start time (one scenario, -count 1, per sharded process)",
			at.Format(time.RFC3339Nano), late.Round(time.Millisecond))
	}
	return nil
}

// shardInfo is the result JSON header's record of a sharded run:
// which shard, of how many requests, when it was to start and when it did.
func shardInfo(o *Outcome) [][2]string {
	e := o.Plan.Engine
	if !e.Shard.Enabled() {
		return nil
	}
	kv := [][2]string{
		{"shard", e.Shard.String()},
		{"shard_requests", strconv.Itoa(len(o.Plan.samples))},
		{"shard_start", o.Result.Start.UTC().Format(time.RFC3339Nano)},
	}
	if !e.StartAt.IsZero() {
		kv = append(kv, [2]string{"start_at", e.StartAt.UTC().Format(time.RFC3339Nano)})
	}
	return kv
}
