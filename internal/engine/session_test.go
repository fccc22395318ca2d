package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/metrics"
)

// constant is a Sampler that always draws v.
type constant float64

func (c constant) Float(*rand.Rand) float64 { return float64(c) }

// convs builds n conversations of turns user turns each.
func convs(n, turns int) []conversation.Conversation {
	out := make([]conversation.Conversation, n)
	for i := range out {
		c := conversation.Conversation{ID: fmt.Sprintf("c%d", i), System: "be brief"}
		for j := range turns {
			c.Turns = append(c.Turns, conversation.Turn{User: fmt.Sprintf("question %d of %d", j, i), UserTokens: 5, MaxTokens: 8})
		}
		out[i] = c
	}
	return out
}

func chatConfig(url string) Config {
	return Config{BaseURL: url, Backend: "openai-chat", Model: "m", RequestIDPrefix: "t-"}
}

// bySession groups records by session, in the order they were recorded.
func bySession(recs []metrics.Record) map[string][]metrics.Record {
	out := map[string][]metrics.Record{}
	for _, r := range recs {
		out[r.SessionID] = append(out[r.SessionID], r)
	}
	return out
}

func TestRunSessionsSendsEveryTurnInOrder(t *testing.T) {
	srv := newStreamServer(t)
	srv.hold = 5 * time.Millisecond
	var progress, total atomic.Int64
	cfg := chatConfig(srv.URL)
	cfg.Progress = func(done, all int) { progress.Store(int64(done)); total.Store(int64(all)) }
	think := 20 * time.Millisecond
	res, err := RunSessions(t.Context(), cfg, Sessions{
		Conversations: convs(6, 3), MaxActive: 2, ThinkTime: constant(think.Seconds()),
	})
	require.NoError(t, err)
	require.Len(t, res.Records, 18)
	assert.Nil(t, res.Stopped)
	assert.EqualValues(t, 18, progress.Load())
	assert.EqualValues(t, 18, total.Load())
	assert.LessOrEqual(t, srv.maxInFlight.Load(), int64(2), "at most MaxActive sessions, one request each")
	sessions := bySession(res.Records)
	require.Len(t, sessions, 6)
	for id, recs := range sessions {
		require.Len(t, recs, 3, id)
		for k, r := range recs {
			assert.True(t, r.Success, "%s turn %d: %s", id, k, r.Error)
			assert.Equal(t, k, r.Turn)
			assert.Equal(t, 0, r.ToolRound)
			assert.Equal(t, requestID(id, k, 0), r.RequestID)
			if k > 0 {
				prev := recs[k-1]
				// The next turn waits for the reply, then the think time.
				assert.GreaterOrEqual(t, r.Start, prev.Start+prev.Latency+think, "%s turn %d", id, k)
				assert.GreaterOrEqual(t, r.Scheduled, prev.Start+prev.Latency+think)
				assert.Greater(t, r.PromptLen, prev.PromptLen, "the history grows")
			}
		}
	}
	assert.Contains(t, sessions, "t-c0")
}

func TestRunSessionsWarmupsAndMaxTurns(t *testing.T) {
	srv := newStreamServer(t)
	cfg := chatConfig(srv.URL)
	var total atomic.Int64
	cfg.Progress = func(_, all int) { total.Store(int64(all)) }
	cfg.MaxDuration = 300 * time.Millisecond
	// An hour of think time: the warm-ups, which do not think, finish;
	// the measured sessions send their first turn and wait until the run
	// ends. (Warm-ups that thought would not end before the deadline.)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := RunSessions(ctx, cfg, Sessions{
		Conversations: convs(5, 4), Warmups: 2, MaxTurns: 2, ThinkTime: constant(3600),
	})
	require.NoError(t, err)
	assert.EqualValues(t, 6, total.Load(), "progress counts the measured turns only")
	require.Len(t, res.Warmups, 4, "2 warm-up sessions of 2 turns")
	for _, r := range res.Warmups {
		assert.True(t, r.Success, "%s: %s", r.RequestID, r.Error)
		assert.Contains(t, r.SessionID, "t-warmup-c")
	}
	assert.Len(t, res.Records, 6, "3 measured sessions: a first turn, then the unsent second")
	for _, r := range res.Records {
		assert.NotContains(t, r.SessionID, "warmup")
		assert.NotContains(t, []string{"t-c0", "t-c1"}, r.SessionID, "the warm-up conversations are not measured again")
		assert.Equal(t, r.Turn == 1, r.Unsent)
	}
}

func TestRunSessionsEndsOnAFailure(t *testing.T) {
	srv := newStreamServer(t)
	// The readiness check is skipped; the first answer is a 500.
	srv.statuses = []int{500}
	res, err := RunSessions(t.Context(), chatConfig(srv.URL), Sessions{Conversations: convs(1, 3)})
	require.NoError(t, err)
	require.Len(t, res.Records, 1, "a failed request ends its session, as vLLM's client drops the conversation")
	assert.Equal(t, metrics.FailureHTTPStatus, res.Records[0].Failure)
}

func TestRunSessionsStopsWaitingSessions(t *testing.T) {
	srv := newStreamServer(t)
	cfg := chatConfig(srv.URL)
	cfg.MaxDuration = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := RunSessions(ctx, cfg, Sessions{
		Conversations: convs(4, 3), MaxActive: 3, ThinkTime: constant(3600),
	})
	require.NoError(t, err)
	require.ErrorIs(t, res.Stopped, ErrMaxDuration)
	sessions := bySession(res.Records)
	require.Len(t, sessions, 4)
	for id, recs := range sessions {
		last := recs[len(recs)-1]
		assert.True(t, last.Unsent, "%s: the request it waited for is unsent", id)
		assert.Equal(t, metrics.FailureCanceled, last.Failure)
	}
	assert.Len(t, sessions["t-c3"], 1, "the fourth session never got a place")
	s := metrics.Summarize(res.Records, res.Duration, metrics.Options{})
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 3, s.Sessions.Sessions)
}

func TestRunSessionsRejects(t *testing.T) {
	srv := newStreamServer(t)
	tests := []struct {
		name string
		cfg  func(*Config)
		sess Sessions
		want string
	}{
		{"completions backend", func(c *Config) { c.Backend = "openai" }, Sessions{Conversations: convs(1, 1)}, "sessions need openai-chat"},
		{"no conversations", nil, Sessions{}, "no conversations"},
		{"warm-ups take all", nil, Sessions{Conversations: convs(2, 1), Warmups: 2}, "leave none"},
		{"request concurrency", func(c *Config) { c.MaxConcurrency = 2 }, Sessions{Conversations: convs(1, 1)}, "not for sessions"},
		{"too many turns", nil, Sessions{Conversations: convs(1, 1), MaxTurns: MaxSessionTurns + 1}, "over the maximum"},
		{"empty conversation", nil, Sessions{Conversations: []conversation.Conversation{{ID: "x"}}}, "no user turn"},
		{"some timed", nil, Sessions{Conversations: []conversation.Conversation{
			{ID: "a", HasAt: true, Turns: convs(1, 1)[0].Turns}, {ID: "b", Turns: convs(1, 1)[0].Turns},
		}}, "all or none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := chatConfig(srv.URL)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, err := RunSessions(t.Context(), cfg, tt.sess)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestRunSessionsTraceTimes(t *testing.T) {
	srv := newStreamServer(t)
	cs := convs(3, 1)
	for i := range cs {
		cs[i].HasAt, cs[i].At = true, time.Duration(i)*40*time.Millisecond
	}
	cfg := chatConfig(srv.URL)
	cfg.TraceSpeed = 2
	res, err := RunSessions(t.Context(), cfg, Sessions{Conversations: cs})
	require.NoError(t, err)
	require.Len(t, res.Records, 3)
	for i, r := range res.Records {
		assert.Equal(t, time.Duration(i)*20*time.Millisecond, r.Scheduled, "trace time over the trace speed")
		assert.GreaterOrEqual(t, r.Start, r.Scheduled)
	}
}

func TestRunSessionsCanceled(t *testing.T) {
	srv := newStreamServer(t)
	srv.hold = time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := RunSessions(ctx, chatConfig(srv.URL), Sessions{Conversations: convs(3, 2), MaxActive: 1})
	require.NoError(t, err)
	require.True(t, errors.Is(res.Stopped, context.Canceled), "%v", res.Stopped)
	require.Len(t, res.Records, 3)
	assert.Equal(t, metrics.FailureCanceled, res.Records[0].Failure)
	assert.False(t, res.Records[0].Unsent, "in flight, then canceled")
	assert.True(t, res.Records[1].Unsent)
	assert.True(t, res.Records[2].Unsent)
}
