package benchtest

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/sim"
)

// countingSim serves the simulator on loopback as a deployed server and
// counts the completions it serves.
func countingSim(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	srv, err := sim.New(sim.Config{Profile: "instant"})
	require.NoError(t, err)
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			n.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL, &n
}

// TestPairedDeployedServers runs one pair of `servegate compare` by
// hand: a url scenario whose base and head servers the environment names
// (SERVEGATE_BASE_URL, SERVEGATE_URL), in alternate mode. Each server
// gets its side's requests, and the pair record says the mode, the URL
// difference and both result files.
func TestPairedDeployedServers(t *testing.T) {
	dir := useOut(t)
	baseURL, baseN := countingSim(t)
	headURL, headN := countingSim(t)
	const text = `name: deployed
target: {kind: url, url: "http://127.0.0.1:1", model: servegate/sim-instant}
dataset: {num_prompts: 6, input_len: 32, output_len: 4, seed: 7}
load: {request_rate: 200, ready_timeout: 0s}
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
`
	roots := map[string]string{"base": t.TempDir(), "head": t.TempDir()}
	for _, root := range roots {
		require.NoError(t, os.WriteFile(filepath.Join(root, "s.yaml"), []byte(text), 0o644))
	}
	t.Setenv(pipeline.EnvPairedBase, roots["base"])
	t.Setenv(pipeline.EnvPairedHead, roots["head"])
	t.Setenv(pipeline.EnvBaseURL, baseURL)
	t.Setenv(scenario.EnvURL, headURL)
	t.Setenv(scenario.EnvTarget, "")
	t.Setenv(pipeline.EnvPair, "2")
	t.Setenv(pipeline.EnvPairMode, pipeline.PairAlternate)
	scs, err := scenario.LoadFile(filepath.Join(roots["head"], "s.yaml"))
	require.NoError(t, err)

	bt := flag.Lookup("test.benchtime")
	prev := bt.Value.String()
	require.NoError(t, bt.Value.Set("1x"))
	defer bt.Value.Set(prev)
	res := testing.Benchmark(func(b *testing.B) { Bench(b, scs[0]) })
	require.Positive(t, res.N, "the paired benchmark failed")

	data, err := os.ReadFile(filepath.Join(dir, "deployed.pair.json"))
	require.NoError(t, err)
	var rec pipeline.PairRecord
	require.NoError(t, json.Unmarshal(data, &rec))
	assert.Nil(t, rec.Problem)
	assert.Equal(t, 2, rec.Pair)
	assert.Equal(t, pipeline.PairAlternate, rec.Mode)
	assert.Equal(t, []pipeline.TargetChange{{Key: "target.url", Base: baseURL, Head: headURL}}, rec.TargetChanges)
	assert.FileExists(t, filepath.Join(dir, rec.Base.Result))
	assert.FileExists(t, filepath.Join(dir, rec.Head.Result))
	assert.NotEqual(t, rec.Base.Result, rec.Head.Result)
	assert.Equal(t, int64(6), baseN.Load(), "base's requests reach base's server")
	assert.Equal(t, int64(6), headN.Load(), "head's requests reach head's server")
}
