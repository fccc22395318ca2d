package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFaultHeader: each fault the header asks for shows in what a plain
// SSE client reads, and in the ground truth.
func TestFaultHeader(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 5
	s, base := start(t, Config{Params: &p})
	cases := []struct {
		fault string
		check func(t *testing.T, r streamResult, tr Truth)
	}{
		{"status=429", func(t *testing.T, r streamResult, tr Truth) {
			require.Equal(t, http.StatusTooManyRequests, r.status)
			var e errorResponse
			require.NoError(t, json.Unmarshal(r.body, &e))
			require.Equal(t, 429, e.Error.Code)
			require.Equal(t, "TooManyRequestsError", e.Error.Type)
		}},
		{"status=500", func(t *testing.T, r streamResult, tr Truth) {
			require.Equal(t, http.StatusInternalServerError, r.status)
		}},
		{"status=503", func(t *testing.T, r streamResult, tr Truth) {
			require.Equal(t, http.StatusServiceUnavailable, r.status)
		}},
		{"abort_after=3", func(t *testing.T, r streamResult, tr Truth) {
			require.Equal(t, http.StatusOK, r.status)
			require.Error(t, r.err, "the connection is cut mid-stream")
			require.False(t, r.done())
			texts, _ := r.content(t)
			require.Len(t, texts, 3)
		}},
		{"abort_after=0", func(t *testing.T, r streamResult, tr Truth) {
			require.Error(t, r.err)
			require.Empty(t, r.events)
		}},
		{"stall_ms=300,stall_after=2", func(t *testing.T, r streamResult, tr Truth) {
			require.True(t, r.done())
			_, at := r.content(t)
			require.GreaterOrEqual(t, at[2]-at[1], 300*time.Millisecond, "the third chunk comes after the stall")
			require.GreaterOrEqual(t, tr.ChunkMS[2]-tr.ChunkMS[1], 300.0)
		}},
		{"error_after=2", func(t *testing.T, r streamResult, tr Truth) {
			require.True(t, r.done())
			texts, _ := r.content(t)
			require.Len(t, texts, 2)
			var e struct {
				Error errorInfo `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.events[2].data), &e))
			require.Equal(t, 500, e.Error.Code)
			require.Equal(t, "InternalServerError", e.Error.Type)
		}},
		{"malformed_after=1", func(t *testing.T, r streamResult, tr Truth) {
			require.True(t, r.done())
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.events[0].data), &v))
			require.Error(t, json.Unmarshal([]byte(r.events[1].data), &v), "chunk 1 is not JSON")
		}},
	}
	for _, c := range cases {
		t.Run(c.fault, func(t *testing.T) {
			id := "fault-" + c.fault
			r := post(context.Background(), base+"/v1/completions", completionBody("Hi there", 8, true), map[string]string{FaultHeader: c.fault, "X-Request-Id": id})
			tr, ok := s.Truth(id)
			require.True(t, ok)
			require.NotEmpty(t, tr.Fault)
			c.check(t, r, tr)
		})
	}
}

// TestFaultRates: configured rates inject faults into about that share of
// requests, the same ones for the same seed and ids.
func TestFaultRates(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 0
	p.FaultRate429 = 0.2
	p.FaultRate503 = 0.1
	p.FaultAbortRate = 0.1
	p.FaultAbortAfter = 0 // before the first chunk: zero-latency chunks may merge
	_, base := start(t, Config{Params: &p})
	counts := map[string]int{}
	const n = 400
	for i := range n {
		r := post(context.Background(), base+"/v1/completions", completionBody("Hi", 3, true), map[string]string{"X-Request-Id": "rate-" + string(rune('a'+i%26)) + time.Duration(i).String()})
		switch {
		case r.status == 429 || r.status == 503:
			counts[http.StatusText(r.status)]++
		case r.err != nil:
			counts["abort"]++
		case r.done():
			counts["ok"]++
		}
	}
	t.Logf("%v", counts)
	require.InDelta(t, 0.2*n, counts["Too Many Requests"], 0.06*n)
	require.InDelta(t, 0.1*n, counts["Service Unavailable"], 0.05*n)
	require.InDelta(t, 0.1*0.7*n, counts["abort"], 0.04*n)
	require.Equal(t, n, counts["Too Many Requests"]+counts["Service Unavailable"]+counts["abort"]+counts["ok"])
}

// TestSlowStart: /health answers 503 until the startup delay has passed.
func TestSlowStart(t *testing.T) {
	p := testParams()
	p.StartupDelayMS = 300
	_, base := start(t, Config{Params: &p})
	resp, err := http.Get(base + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
}

// TestClientGoneAborts: a client that disconnects frees its sequence, and
// the engine goes on serving others.
func TestClientGoneAborts(t *testing.T) {
	p := testParams()
	p.StepFixedMS = 5
	s, base := start(t, Config{Params: &p})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	post(ctx, base+"/v1/completions", completionBody("Hi", 1000, true), map[string]string{"X-Request-Id": "gone"})
	require.Eventually(t, func() bool {
		tr, _ := s.Truth("gone")
		return tr.FinishReason == "abort"
	}, 5*time.Second, 10*time.Millisecond)
	tr, _ := s.Truth("gone")
	require.Less(t, tr.OutputTokens, 1000)
	r := post(context.Background(), base+"/v1/completions", completionBody("Hi", 3, true), nil)
	require.True(t, r.done())
	require.Eventually(t, func() bool { return s.eng.snapshot().Running == 0 }, 5*time.Second, 10*time.Millisecond)
}
