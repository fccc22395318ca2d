package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/sim"
)

// deployment is a simulator on a loopback port, standing in for a server
// CI deployed: it counts the completions it serves.
type deployment struct {
	URL         string
	completions atomic.Int64
}

func deploy(t *testing.T) *deployment {
	t.Helper()
	srv, err := sim.New(sim.Config{Profile: "instant"})
	require.NoError(t, err)
	d := &deployment{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			d.completions.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	d.URL = hs.URL
	return d
}

// urlScenario is one scenario file on both sides, a url target whose
// server each side's environment names.
const urlScenario = `name: deployed
target: {kind: url, url: "http://127.0.0.1:1", model: servegate/sim-instant}
dataset: {num_prompts: 6, input_len: 32, output_len: 4, seed: 7}
load: {request_rate: 200, ready_timeout: 0s}
harness: {max_lateness_p99: 0, max_cpu: 0, max_sched_latency_p99: 0}
`

// pairedRoots writes text as scenarios/s.yaml under a base and a head
// root, sets paired mode's environment, and returns head's scenario.
func pairedRoots(t *testing.T, text string) *scenario.Scenario {
	t.Helper()
	base, head := t.TempDir(), t.TempDir()
	for _, root := range []string{base, head} {
		f := filepath.Join(root, "scenarios", "s.yaml")
		require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		require.NoError(t, os.WriteFile(f, []byte(text), 0o644))
	}
	t.Setenv(EnvPairedBase, base)
	t.Setenv(EnvPairedHead, head)
	scs, err := scenario.LoadFile(filepath.Join(head, "scenarios", "s.yaml"))
	require.NoError(t, err)
	return scs[0]
}

// TestPairedURLs: a url target pairs two servers deployed elsewhere,
// base's from SERVEGATE_BASE_URL and head's from SERVEGATE_URL. Each
// side's requests reach its own server only, one schedule on both.
func TestPairedURLs(t *testing.T) {
	baseSrv, headSrv := deploy(t), deploy(t)
	sc := pairedRoots(t, urlScenario)
	t.Setenv(scenario.EnvURL, headSrv.URL)
	t.Setenv(EnvBaseURL, baseSrv.URL)

	head, err := sc.Override(scenario.EnvFromOS())
	require.NoError(t, err)
	base, err := BaseScenario(sc)
	require.NoError(t, err)
	require.NoError(t, Pairable(base))
	require.NoError(t, CheckSides(base, head))
	require.NoError(t, CheckIdentity(base, head), "the URL is the target's, not the workload's")
	assert.Equal(t, PairTogether, ChoosePairMode("", base.Target, head.Target), "two deployments elsewhere run together")
	assert.Equal(t, []string{fmt.Sprintf("target.url: %s (base: %s)", headSrv.URL, baseSrv.URL)},
		TargetDiff(base.Target, head.Target, "", ""))

	ctx := t.Context()
	plan := NewPlan(head)
	tb, err := StartTarget(ctx, base.Target, nil)
	require.NoError(t, err)
	th, err := StartTarget(ctx, head.Target, nil)
	require.NoError(t, err)
	ob, oh, err := ExecutePair(ctx, plan, tb, th, true, Hooks{})
	require.NoError(t, err)
	assert.Equal(t, 6, ob.Summary.Completed)
	assert.Equal(t, 6, oh.Summary.Completed)
	assert.Equal(t, int64(6), baseSrv.completions.Load(), "base's requests reach base's server")
	assert.Equal(t, int64(6), headSrv.completions.Load(), "head's requests reach head's server")
	assert.Equal(t, scheduled(ob), scheduled(oh))
	assert.True(t, ob.PrefixCache.Done && oh.PrefixCache.Done, "each server's cache emptied before its run")
}

// TestPairedURLsBadInput: one URL for both sides, and a server that
// serves another model than the scenario names, each one message.
func TestPairedURLsBadInput(t *testing.T) {
	srv := deploy(t)
	sc := pairedRoots(t, urlScenario)
	t.Setenv(scenario.EnvURL, srv.URL)
	head, err := sc.Override(scenario.EnvFromOS())
	require.NoError(t, err)
	for _, baseURL := range []string{"", srv.URL + "/", strings.Replace(srv.URL, "http://", "HTTP://", 1)} {
		t.Setenv(EnvBaseURL, baseURL)
		base, err := BaseScenario(sc)
		require.NoError(t, err)
		err = CheckSides(base, head)
		require.Error(t, err, "SERVEGATE_BASE_URL=%q", baseURL)
		assert.Contains(t, err.Error(), "base's and head's url targets are both "+srv.URL)
		assert.Contains(t, err.Error(), "SERVEGATE_BASE_URL (servegate compare -base-url)")
	}

	other := head.Target
	other.Model = "acme/other-7b"
	_, err = StartTarget(t.Context(), other, nil)
	require.EqualError(t, err, fmt.Sprintf("start url target: %s serves servegate/sim-instant, not acme/other-7b, the model the scenario names", srv.URL))
}

// TestExecutePairInTurn: in alternate mode each side's server starts
// just before its run and stops after it, so the two never run at once;
// the order follows baseFirst (base, head, then head, base).
func TestExecutePairInTurn(t *testing.T) {
	sc := parse(t, `
name: turns
target: {kind: inproc, profile: instant}
dataset: {num_prompts: 4, input_len: 32, output_len: 4, seed: 7}
load: {request_rate: 200, ready_timeout: 0s}
`)
	plan := NewPlan(sc)
	var mu sync.Mutex
	var events []string
	note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	start := func(side string) StartFunc {
		return func(ctx context.Context) (*Target, error) {
			tgt, err := StartTarget(ctx, plan.Target, nil)
			if err != nil {
				return nil, err
			}
			note("start " + side)
			return WithLogs(*tgt, nil, func(ctx context.Context) error {
				note("stop " + side)
				return tgt.Close(ctx)
			}), nil
		}
	}
	ctx := t.Context()
	for _, baseFirst := range []bool{true, false} {
		events = nil
		ob, oh, err := ExecutePairInTurn(ctx, plan, start("base"), start("head"), baseFirst, Hooks{})
		require.NoError(t, err)
		assert.Equal(t, 4, ob.Summary.Completed)
		assert.Equal(t, 4, oh.Summary.Completed)
		assert.Equal(t, scheduled(ob), scheduled(oh))
		want := []string{"start base", "stop base", "start head", "stop head"}
		if !baseFirst {
			want = []string{"start head", "stop head", "start base", "stop base"}
		}
		assert.Equal(t, want, events)
	}

	failing := func(context.Context) (*Target, error) { return nil, fmt.Errorf("image nope:1 not found") }
	_, _, err := ExecutePairInTurn(ctx, plan, start("base"), failing, true, Hooks{})
	var se *SideError
	require.ErrorAs(t, err, &se)
	assert.True(t, se.Start)
	assert.Equal(t, "head", se.Side)
	assert.EqualError(t, err, "head's image nope:1 not found")
}

// TestChoosePairMode: vllm targets and GPUs alternate, the rest run together,
// and a mode given wins.
func TestChoosePairMode(t *testing.T) {
	sim := scenario.Target{Kind: scenario.TargetSim}
	vllm := scenario.Target{Kind: scenario.TargetVLLM}
	assert.Equal(t, PairTogether, ChoosePairMode("", sim, sim))
	assert.Equal(t, PairAlternate, ChoosePairMode("", vllm, vllm))
	assert.Equal(t, PairAlternate, ChoosePairMode("", sim, vllm))
	assert.Equal(t, PairTogether, ChoosePairMode(PairTogether, vllm, vllm))
	assert.Equal(t, PairAlternate, ChoosePairMode(PairAlternate, sim, sim))
	gpu := scenario.Target{Kind: scenario.TargetContainer, GPUs: scenario.GPUs{Count: 1}}
	assert.Equal(t, PairAlternate, ChoosePairMode("", gpu, gpu), "one GPU, two servers")
}
