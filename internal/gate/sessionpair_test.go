package gate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/pipeline"
)

// runSessionPair runs the shipped scenario file on two in-process
// simulators at once, the way compare pairs base and head, head's
// simulator with the extra args, and returns both sides' detailed
// result files.
func runSessionPair(t *testing.T, file string, headArgs ...string) (base, head []byte) {
	t.Helper()
	scs, err := scenario.LoadFile(file)
	require.NoError(t, err)
	sc := scs[0]
	sc.Target.Kind = scenario.TargetInproc
	plan := pipeline.NewPlan(sc)
	ctx := context.Background()
	var tgts []*pipeline.Target
	for i := range 2 {
		spec := plan.Target
		if i == 1 {
			spec.Args = append(slices.Clip(spec.Args), headArgs...)
		}
		tgt, err := pipeline.StartTarget(ctx, spec, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tgt.Close(context.Background()) })
		tgts = append(tgts, tgt)
	}
	ob, oh, err := pipeline.ExecutePair(ctx, plan, tgts[0], tgts[1], true, pipeline.Hooks{})
	require.NoError(t, err)
	return ob.ResultJSON(ob.RunInfo(), true), oh.ResultJSON(oh.RunInfo(), true)
}

// TestPairSessionsByTurn runs the shipped agent-tools scenario (sessions
// with tool rounds) on both sides of a pair, for real, and pairs the two
// result files. Its turns are scheduled from the previous answers, so the
// two sides' schedules differ; its requests pair by session, turn and
// tool round, every one of them, each with its namesake. With head's
// simulator failing one stream in ten, head's sessions end at their
// first failure: the failed request pairs (a failure of head's) and
// base's requests after it are left out.
func TestPairSessionsByTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent-tools scenario on the simulator twice")
	}
	const file = "../../scenarios/agent-tools.yaml"
	base, head := runSessionPair(t, file)
	b, err := readPairedResult(base)
	require.NoError(t, err)
	h, err := readPairedResult(head)
	require.NoError(t, err)
	require.NotNil(t, b.SessionIDs, "a session run's file names each request's session")
	require.Greater(t, slices.Max(b.ToolRounds), 0, "the scenario has tool rounds")

	// What a pair by schedule refused: the sides' schedules differ.
	_, err = matchSchedule(b, h)
	require.ErrorContains(t, err, "a paired run sends one schedule to both")

	ms, err := matchRequests(b, h)
	require.NoError(t, err)
	require.Len(t, ms, len(b.TTFTs), "A/A: every request pairs")
	require.Len(t, ms, len(h.TTFTs))
	seen := map[int]bool{}
	for i, m := range ms {
		assert.Equal(t, b.SessionIDs[m.b], h.SessionIDs[m.h])
		assert.Equal(t, b.SessionTurns[m.b], h.SessionTurns[m.h])
		assert.Equal(t, b.ToolRounds[m.b], h.ToolRounds[m.h])
		assert.False(t, seen[m.h], "head's request %d paired twice", m.h)
		seen[m.h] = true
		if i > 0 {
			assert.LessOrEqual(t, ms[i-1].start, m.start, "in time order")
		}
	}
	run, err := PairRunFromResults("agent-tools", base, head)
	require.NoError(t, err)
	require.Len(t, run.Requests, len(b.TTFTs))
	pairs, dropped, err := RequestPairsFromResults("agent-tools", base, head)
	require.NoError(t, err)
	assert.Zero(t, dropped)
	assert.Len(t, pairs, len(b.TTFTs))

	// Head fails some streams: its sessions end there.
	base, head = runSessionPair(t, file, "--fault_error_rate=0.1")
	b, err = readPairedResult(base)
	require.NoError(t, err)
	h, err = readPairedResult(head)
	require.NoError(t, err)
	failed := 0
	for _, e := range h.Errors {
		if e != "" {
			failed++
		}
	}
	require.Positive(t, failed, "head failed some requests")
	require.Less(t, len(h.TTFTs), len(b.TTFTs), "head's failed sessions sent fewer requests")
	run, err = PairRunFromResults("agent-tools", base, head)
	require.NoError(t, err)
	headFailed := 0
	for _, r := range run.Requests {
		if r.HeadFailed {
			headFailed++
		}
		assert.False(t, r.BaseFailed)
	}
	assert.Equal(t, failed, headFailed, "every failed request of head is paired, as a failure")
	assert.Len(t, run.Requests, len(h.TTFTs), "base's requests after head's failures are left out")
}

// sessionJSON writes a session run's detailed result file: one request
// per key "id/turn/round", scheduled 0.1 s apart, failed where errs says.
func sessionJSON(t *testing.T, keys []string, errs map[string]string) []byte {
	t.Helper()
	var ids []string
	var turns, rounds []int
	var ttfts, sched []float64
	var es []string
	for i, k := range keys {
		var turn, round int
		parts := strings.Split(k, "/")
		id := parts[0]
		require.NoError(t, json.Unmarshal([]byte(parts[1]), &turn))
		require.NoError(t, json.Unmarshal([]byte(parts[2]), &round))
		ids, turns, rounds = append(ids, id), append(turns, turn), append(rounds, round)
		ttfts, sched, es = append(ttfts, 0.05), append(sched, 0.1*float64(i)), append(es, errs[k])
	}
	data, err := json.Marshal(map[string]any{
		"ttfts": ttfts, "errors": es, "scheduled_times": sched, "start_times": sched, "duration": 1.0,
		"session_ids": ids, "session_turns": turns, "session_tool_rounds": rounds,
	})
	require.NoError(t, err)
	return data
}

// TestPairSessionsRefuses: both sides must hold the same requests, bar
// those a side never sent because its session had failed; the error
// names the first request missing.
func TestPairSessionsRefuses(t *testing.T) {
	base := sessionJSON(t, []string{"a/0/0", "b/0/0", "a/0/1", "a/1/0", "b/1/0"}, nil)
	plain := resultJSON(t, []float64{1, 1, 1, 1, 1}, []string{"", "", "", "", ""}, []float64{0, 0.1, 0.2, 0.3, 0.4})
	for _, tt := range []struct {
		name       string
		base, head []byte
		want       string
	}{
		{"one side sessions", base, plain, "not a pair: only base is a session run"},
		{"other side sessions", plain, base, "not a pair: only head is a session run"},
		{"missing in head", base, sessionJSON(t, []string{"a/0/0", "b/0/0", "a/1/0", "b/1/0"}, nil),
			`not a pair: session "a" turn 0 tool round 1 is in base, not in head`},
		{"extra in head", base, sessionJSON(t, []string{"a/0/0", "b/0/0", "a/0/1", "a/1/0", "b/1/0", "b/2/0"}, nil),
			`not a pair: session "b" turn 2 tool round 0 is in head, not in base`},
		{"missing before a failure", base, sessionJSON(t, []string{"a/0/0", "b/0/0", "a/1/0", "b/1/0"}, map[string]string{"a/1/0": "boom"}),
			`session "a" turn 0 tool round 1 is in base, not in head`},
		{"twice", base, sessionJSON(t, []string{"a/0/0", "b/0/0", "a/0/1", "a/0/1", "b/1/0"}, nil),
			`head: read result: requests 2 and 3 are both session "a" turn 0 tool round 1`},
	} {
		_, err := PairRunFromResults("p", tt.base, tt.head)
		require.ErrorContains(t, err, tt.want, tt.name)
		_, _, err = RequestPairsFromResults("p", tt.base, tt.head)
		require.ErrorContains(t, err, tt.want, tt.name)
	}

	// Head's session "a" failed at its tool round: base's later turn of
	// "a" is left out, the failure pairs.
	head := sessionJSON(t, []string{"b/0/0", "a/0/0", "a/0/1", "b/1/0"}, map[string]string{"a/0/1": "boom"})
	run, err := PairRunFromResults("p", base, head)
	require.NoError(t, err)
	require.Len(t, run.Requests, 4)
	var failed []float64
	for _, r := range run.Requests {
		if r.HeadFailed {
			failed = append(failed, r.Start)
		}
	}
	require.Len(t, failed, 1)
	assert.InDelta(t, 0.2, failed[0], 1e-9, "a/0/1, at 0.2 s on both sides")
	pairs, dropped, err := RequestPairsFromResults("p", base, head)
	require.NoError(t, err)
	assert.Equal(t, 1, dropped)
	require.Len(t, pairs, 3)
	for i, want := range []float64{0.05, 0.05, 0.35} { // (0+0.1)/2, (0.1+0)/2, (0.4+0.3)/2
		assert.InDelta(t, want, pairs[i].Start, 1e-9)
	}
}
