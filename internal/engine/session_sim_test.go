package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/sim"
)

// sentRequest is what the simulator received: the request's id, session
// header and messages.
type sentRequest struct {
	id, session string
	messages    []sentMessage
	tools       bool
}

// sentMessage is one message of a received chat request.
type sentMessage struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name, Arguments string
		} `json:"function"`
	} `json:"tool_calls"`
}

// recordingSim serves the in-process simulator with knobs set and keeps
// every request it received, by request id.
func recordingSim(tb testing.TB, header string, set map[string]string) (string, func() map[string]sentRequest) {
	tb.Helper()
	srv, err := sim.New(sim.Config{Profile: "instant", Set: set})
	require.NoError(tb, err)
	var mu sync.Mutex
	got := map[string]sentRequest{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Messages []sentMessage    `json:"messages"`
			Tools    []map[string]any `json:"tools"`
		}
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		got[r.Header.Get("x-request-id")] = sentRequest{id: r.Header.Get("x-request-id"), session: r.Header.Get(header), messages: p.Messages, tools: len(p.Tools) > 0}
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		srv.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() { hs.Close(); _ = srv.Close() })
	return hs.URL, func() map[string]sentRequest {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

func text(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// Each turn sends the whole history with the server's actual answers: the
// previous request's messages, the answer's text as the assistant
// message, then the next user turn; every request carries the session id
// in the configured header.
func TestSessionsSendTheServersAnswers(t *testing.T) {
	url, sent := recordingSim(t, "x-affinity", nil)
	cfg := chatConfig(url)
	cfg.Model = "servegate/sim-instant"
	cs := convs(3, 4)
	res, err := RunSessions(t.Context(), cfg, Sessions{Conversations: cs, MaxActive: 2, Header: "x-affinity"})
	require.NoError(t, err)
	require.Len(t, res.Records, 12)
	got := sent()
	for id, recs := range bySession(res.Records) {
		var conv int
		for i := range cs {
			if "t-"+cs[i].ID == id {
				conv = i
			}
		}
		for k, r := range recs {
			require.True(t, r.Success, r.Error)
			req, ok := got[r.RequestID]
			require.True(t, ok, r.RequestID)
			assert.Equal(t, id, req.session, "the session header")
			assert.False(t, req.tools)
			// system, then (user, assistant) per earlier turn, then this user turn.
			require.Len(t, req.messages, 2+2*k, "%s turn %d", id, k)
			assert.Equal(t, "system", req.messages[0].Role)
			assert.Equal(t, cs[conv].System, text(req.messages[0].Content))
			for j := 0; j <= k; j++ {
				u := req.messages[1+2*j]
				assert.Equal(t, "user", u.Role)
				assert.Equal(t, cs[conv].Turns[j].User, text(u.Content))
				if j < k {
					a := req.messages[2+2*j]
					assert.Equal(t, "assistant", a.Role)
					assert.Equal(t, recs[j].GeneratedText, text(a.Content), "the server's actual answer of turn %d", j)
					assert.NotEmpty(t, recs[j].GeneratedText)
				}
			}
		}
	}
}

// A server that asks for tools on every answer gets tool results up to the
// cap, then the turn ends, counted as a cap hit; the history keeps each
// assistant message's calls and one tool message per call with its id.
func TestSessionsToolLoopStopsAtTheCap(t *testing.T) {
	url, sent := recordingSim(t, "x-session-id", map[string]string{"tool_call_rate": "1"})
	cfg := chatConfig(url)
	cfg.Model = "servegate/sim-instant"
	tools := json.RawMessage(`[{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]`)
	cs := convs(2, 2)
	for i := range cs {
		for j := range cs[i].Turns {
			cs[i].Turns[j].MaxTokens = 64 // room for a whole call
		}
	}
	res, err := RunSessions(t.Context(), cfg, Sessions{
		Conversations: cs, Tools: tools, MaxToolRounds: 2,
		ToolLatency: constant(0.005), ToolResultTokens: constant(7),
	})
	require.NoError(t, err)
	// Per user turn: the first request and 2 tool rounds; 2 turns, 2 sessions.
	require.Len(t, res.Records, 12)
	got := sent()
	for id, recs := range bySession(res.Records) {
		require.Len(t, recs, 6, id)
		for k, r := range recs {
			require.True(t, r.Success, r.Error)
			assert.Equal(t, k/3, r.Turn)
			assert.Equal(t, k%3, r.ToolRound)
			assert.NotEmpty(t, r.ToolCalls, "tool_call_rate 1 answers every request with a call")
			assert.Equal(t, r.ToolRound == 2, r.ToolCapHit, "%s request %d", id, k)
			req := got[r.RequestID]
			assert.True(t, req.tools, "the tools go with every request")
			if r.ToolRound == 0 {
				assert.Equal(t, "user", req.messages[len(req.messages)-1].Role)
				continue
			}
			// The previous answer's calls, then one tool message per call.
			prev := recs[k-1]
			calls := len(prev.ToolCalls)
			tail := req.messages[len(req.messages)-1-calls:]
			assert.Equal(t, "assistant", tail[0].Role)
			require.Len(t, tail[0].ToolCalls, calls)
			for c := range calls {
				assert.Equal(t, prev.ToolCalls[c].ID, tail[0].ToolCalls[c].ID)
				assert.Equal(t, "tool", tail[1+c].Role)
				assert.Equal(t, prev.ToolCalls[c].ID, tail[1+c].ToolCallID)
				assert.NotEmpty(t, text(tail[1+c].Content))
			}
		}
		// The turn after a cap hit: the capped answer is in the history
		// without its calls, so the conversation stays valid.
		next := got[recs[3].RequestID]
		capped := next.messages[len(next.messages)-2]
		assert.Equal(t, "assistant", capped.Role)
		assert.Empty(t, capped.ToolCalls)
	}
	s := metrics.Summarize(res.Records, res.Duration, metrics.Options{})
	hits, _ := s.Value(metrics.ToolCapHits)
	rounds, _ := s.Value(metrics.ToolRounds)
	mean, _ := s.Value(metrics.MeanToolRounds)
	assert.Equal(t, 4.0, hits)
	assert.Equal(t, 8.0, rounds)
	assert.Equal(t, 2.0, mean)
}

// A server that would call a tool on every answer, with max_tokens too
// small for a whole call, answers with text cut at max_tokens: the run
// has 0 tool rounds, and a warning says why and what to change. With room
// for the call there is no warning, nor with a server that calls no tool
// (its answers stop at max_tokens in prose).
func TestSessionsToolCallsCutShortWarn(t *testing.T) {
	url, _ := recordingSim(t, "x-session-id", map[string]string{"tool_call_rate": "1"})
	cfg := chatConfig(url)
	cfg.Model = "servegate/sim-instant"
	tools := json.RawMessage(`[{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]`)
	for _, c := range []struct {
		maxTokens int
		warn      bool
	}{{4, true}, {12, true}, {64, false}} {
		cs := convs(2, 2)
		for i := range cs {
			for j := range cs[i].Turns {
				cs[i].Turns[j].MaxTokens = c.maxTokens
			}
		}
		res, err := RunSessions(t.Context(), cfg, Sessions{Conversations: cs, Tools: tools, ToolLatency: constant(0), ToolResultTokens: constant(7)})
		require.NoError(t, err)
		s := metrics.Summarize(res.Records, res.Duration, metrics.Options{})
		rounds, _ := s.Value(metrics.ToolRounds)
		if !c.warn {
			assert.Positive(t, rounds, "max_tokens %d", c.maxTokens)
			assert.Empty(t, res.Warnings, "max_tokens %d", c.maxTokens)
			continue
		}
		assert.Zero(t, rounds, "max_tokens %d", c.maxTokens)
		require.Len(t, res.Warnings, 1, "max_tokens %d", c.maxTokens)
		w := res.Warnings[0].Error()
		for _, want := range []string{"no answer held a tool call", "4 of 4 answers stopped at max_tokens", fmt.Sprintf("the largest max_tokens is %d", c.maxTokens), "0 tool rounds", "tool_call_arg_tokens"} {
			assert.Contains(t, w, want)
		}
	}
	noCalls, _ := recordingSim(t, "x-session-id", map[string]string{"tool_call_rate": "0"})
	cfg = chatConfig(noCalls)
	cfg.Model = "servegate/sim-instant"
	cs := convs(2, 2)
	for i := range cs {
		for j := range cs[i].Turns {
			cs[i].Turns[j].MaxTokens = 4
		}
	}
	res, err := RunSessions(t.Context(), cfg, Sessions{Conversations: cs, Tools: tools})
	require.NoError(t, err)
	assert.Equal(t, "length", res.Records[0].FinishReason)
	assert.Empty(t, res.Warnings, "a server that calls no tool")
}
