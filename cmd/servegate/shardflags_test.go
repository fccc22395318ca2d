package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/shard"
)

// TestShardFlags checks --shard and --start-at: parsed onto the Plan's
// engine, and every bad combination refused with the flag named.
func TestShardFlags(t *testing.T) {
	at := time.Now().Add(time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339)
	base := []string{"--model", "m", "--save-result", "--save-detailed"}
	a, fp, p, err := parseBench(append(base, "--shard", "2/4", "--start-at", at))
	require.NoError(t, err)
	plan := flagsPlan(a, fp, &bytes.Buffer{})
	assert.Equal(t, shard.Spec{Index: 2, Count: 4}, plan.Engine.Shard)
	assert.Equal(t, at, plan.Engine.StartAt.UTC().Format(time.RFC3339))
	assert.True(t, plan.Info.Extras, "a shard writes servegate's per-request arrays for the merge")
	assert.Regexp(t, `^bench-[0-9a-f]+-$`, plan.Engine.RequestIDPrefix)
	assert.False(t, p.given("request-id-prefix"))
	a2, fp2, _, err := parseBench(append(base, "--shard", "3/4", "--start-at", at))
	require.NoError(t, err)
	assert.Equal(t, plan.Engine.RequestIDPrefix, flagsPlan(a2, fp2, &bytes.Buffer{}).Engine.RequestIDPrefix, "the shards of a run share request ids")

	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--shard", "3/2", "--start-at", at}, `--shard: shard "3/2": i must be between 1 and N=2`},
		{[]string{"--shard", "x", "--start-at", at}, `--shard: shard "x": want i/N`},
		{[]string{"--shard", "1/2"}, "--shard 1/2 needs --start-at"},
		{[]string{"--start-at", "noon"}, `--start-at: start time "noon": want RFC 3339`},
	} {
		_, _, _, err := parseBench(append(base, tc.args...))
		assert.ErrorContains(t, err, tc.err, "%v", tc.args)
	}
	_, _, _, err = parseBench([]string{"--model", "m", "--shard", "1/2", "--start-at", at})
	assert.ErrorContains(t, err, "--shard 1/2 needs --save-result --save-detailed")
}

// writeShardResult writes shard i of n of a 10-request run that started
// late by late.
func writeShardResult(t *testing.T, dir string, i, n int, late time.Duration) string {
	t.Helper()
	spec := shard.Spec{Index: i, Count: n}
	startAt := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	var recs []metrics.Record
	for _, j := range spec.Indices(10) {
		at := time.Duration(j) * 10 * time.Millisecond
		recs = append(recs, metrics.Record{RequestID: fmt.Sprint(j), Scheduled: at, Dispatched: at, Start: at, PromptLen: 5,
			TTFT: time.Millisecond, ITL: []time.Duration{time.Millisecond}, Latency: 2 * time.Millisecond, OutputTokens: 2, Success: true})
	}
	info := metrics.RunInfo{Date: "20261201-200001", Backend: "openai", ModelID: "m", NumPrompts: 10, Extras: true,
		Metadata: [][2]string{{"shard", spec.String()}, {"shard_requests", "10"},
			{"shard_start", startAt.Add(late).Format(time.RFC3339Nano)}, {"start_at", startAt.Format(time.RFC3339Nano)}}}
	path := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
	require.NoError(t, os.WriteFile(path, metrics.Summarize(recs, 100*time.Millisecond, metrics.Options{}).ResultJSON(info, true), 0o644))
	return path
}

// TestMergeCommand checks servegate merge's exit status: 0 merged, 2 for a
// missing shard, a wrong --shards or too much skew.
func TestMergeCommand(t *testing.T) {
	dir := t.TempDir()
	f1, f2 := writeShardResult(t, dir, 1, 2, 0), writeShardResult(t, dir, 2, 2, 3*time.Millisecond)
	out := filepath.Join(dir, "merged.json")
	merge := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"merge", "--no-plot", "--output", out}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := merge(f1, f2)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Merged 2 shards of 10 requests")
	assert.Contains(t, stdout, "Clock skew (latest start - earliest, each on its own clock): 3.000 ms")
	assert.Contains(t, stdout, "Successful requests:                     10")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	recs, _, err := metrics.RecordsFromResult(data)
	require.NoError(t, err)
	assert.Len(t, recs, 10)

	code, _, stderr = merge(f1)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "missing shards: 2/2")
	code, _, stderr = merge("--shards", "3", f1, f2)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--shards 3 was expected")
	code, _, stderr = merge("--max-skew-ms", "1", f1, f2)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "clock skew 3.0 ms between the shards' starts exceeds --max-skew-ms 1.0")
	code, _, stderr = merge()
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want the shards' result files")
}
