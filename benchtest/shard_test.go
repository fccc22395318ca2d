package benchtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/shard"
)

// shardSuite writes a suite of tiny in-process scenarios.
func shardSuite(t *testing.T, names []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		src := strings.Replace(tiny, "name: tiny", "name: "+name, 1)
		src = strings.Replace(src, "num_prompts: 12", "num_prompts: 4", 1)
		src = strings.Replace(src, "completed == 12", "completed == 4", 1)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(src), 0o644))
	}
	return dir
}

// runChild runs TestChildShardSuite in a child process with env and
// returns its verbose output and exit error.
func runChild(t *testing.T, dir string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildShardSuite$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{"SERVEGATE_CHILD_SHARD_DIR=" + dir, scenario.EnvOut + "=" + t.TempDir()}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSuiteShards runs a suite of seven scenarios as three shards in child
// processes: every scenario runs on exactly one shard, the one
// shard.ShardOf names, and shows as a skipped subtest, with the reason, on
// the others.
func TestSuiteShards(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	names := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"}
	dir := shardSuite(t, names)
	ran := map[string][]int{}
	passRE := regexp.MustCompile(`--- PASS: TestChildShardSuite/scenario=(\S+)`)
	skipRE := regexp.MustCompile(`--- SKIP: TestChildShardSuite/scenario=(\S+)`)
	for i := 1; i <= 3; i++ {
		out, err := runChild(t, dir, fmt.Sprintf("%s=%d/3", shard.EnvSuite, i))
		require.NoError(t, err, out)
		for _, m := range passRE.FindAllStringSubmatch(out, -1) {
			ran[m[1]] = append(ran[m[1]], i)
		}
		skipped := skipRE.FindAllStringSubmatch(out, -1)
		for _, m := range skipped {
			assert.Contains(t, out, fmt.Sprintf("%s=%d/3: scenario %s is on shard %d/3", shard.EnvSuite, i, m[1], shard.ShardOf(m[1], 3)))
		}
		assert.Len(t, skipped, len(names)-len(passRE.FindAllString(out, -1)), out)
	}
	for _, name := range names {
		assert.Equal(t, []int{shard.ShardOf(name, 3)}, ran[name], "scenario %s ran on shards %v", name, ran[name])
	}
}

// TestSuiteShardBadValue checks that a malformed SERVEGATE_SHARD fails the
// run and says why, instead of running everything or nothing.
func TestSuiteShardBadValue(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := shardSuite(t, []string{"alpha"})
	for _, v := range []string{"3/2", "x"} {
		out, err := runChild(t, dir, shard.EnvSuite+"="+v)
		require.Error(t, err, out)
		assert.Contains(t, out, fmt.Sprintf(`SERVEGATE_SHARD: shard %q:`, v))
		assert.NotContains(t, out, "--- PASS: TestChildShardSuite/scenario=alpha")
	}
}

// TestChildShardSuite is the child of the suite shard tests.
func TestChildShardSuite(t *testing.T) {
	dir := os.Getenv("SERVEGATE_CHILD_SHARD_DIR")
	if dir == "" {
		t.Skip("run by TestSuiteShards in a child process")
	}
	RunDir(t, dir)
}

// TestLoadShardEnv checks the environment's load shard: both variables
// together, bad values named.
func TestLoadShardEnv(t *testing.T) {
	at := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	for _, tc := range []struct {
		shard, at, err string
	}{
		{"", "", ""},
		{"2/4", at, ""},
		{"2/4", "", "SERVEGATE_LOAD_SHARD=2/4 needs SERVEGATE_START_AT"},
		{"5/4", at, `SERVEGATE_LOAD_SHARD: shard "5/4"`},
		{"1/2", "tomorrow", `SERVEGATE_START_AT: start time "tomorrow": want RFC 3339`},
		{"1/2", "2099-01-01T00:00:00Z", "SERVEGATE_START_AT: start time 2099-01-01T00:00:00Z is"},
	} {
		t.Setenv(shard.EnvLoad, tc.shard)
		t.Setenv(shard.EnvStartAt, tc.at)
		p := pipeline.NewPlan(parse(t, tiny))
		err := pipeline.ApplyLoadShard(p)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.shard, p.Engine.Shard.String())
		if tc.at != "" {
			assert.Equal(t, tc.at, p.Engine.StartAt.UTC().Format(time.RFC3339Nano))
		}
	}
}

// TestExecuteLoadShard runs shard 2 of 3 of the tiny scenario in process:
// it sends requests 1, 4, 7 and 10 and its result JSON says which shard
// it is; a start time already passed is refused.
func TestExecuteLoadShard(t *testing.T) {
	useOut(t)
	t.Setenv(shard.EnvLoad, "2/3")
	t.Setenv(shard.EnvStartAt, time.Now().Add(time.Hour).Format(time.RFC3339Nano))
	plan, tgt := start(t, t, parse(t, tiny))
	require.NoError(t, plan.Prepare(t.Context()))
	plan.Engine.StartAt = time.Now().Add(200 * time.Millisecond)
	o, err := pipeline.Execute(t.Context(), plan, tgt, pipeline.Hooks{})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 4, 7, 10}, o.Result.Indices)
	var ids []string
	for _, r := range o.Result.Records {
		ids = append(ids, r.RequestID)
	}
	assert.Equal(t, []string{"tiny-1", "tiny-4", "tiny-7", "tiny-10"}, ids)
	js := string(o.ResultJSON(o.RunInfo(), true))
	assert.Contains(t, js, `"shard": "2/3"`)
	assert.Contains(t, js, `"shard_requests": "12"`)
	assert.Contains(t, js, `"start_at": "`)

	_, err = pipeline.Execute(t.Context(), plan, tgt, pipeline.Hooks{})
	assert.ErrorContains(t, err, "passed")
}
