package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/metrics"
)

// This file and sessionturn.go are the session driver: multi-turn
// conversations and agent tool loops (RunSessions). Sessions arrive on the
// engine's schedule (or a trace's times), at most Sessions.MaxActive at
// once; each session sends its turns one after the other, every request
// carrying the whole history with the server's actual answers.

// Limits on a Sessions' numbers, far above any real run.
const (
	// MaxSessionTurns is the largest Sessions.MaxTurns.
	MaxSessionTurns = 10_000
	// MaxToolRoundsLimit is the largest Sessions.MaxToolRounds.
	MaxToolRoundsLimit = 1_000
	// MaxToolResultTokens caps one drawn tool result's length in tokens.
	MaxToolResultTokens = 1 << 20
	// MaxSessionWarmups is the most warm-up sessions.
	MaxSessionWarmups = 10_000
)

// DefaultMaxToolRounds is the cap on tool rounds per user turn when
// Sessions.MaxToolRounds is 0.
const DefaultMaxToolRounds = 8

// A Sampler draws one number from a distribution; the caller says its
// unit (seconds for think times and tool latencies, tokens for tool
// results).
type Sampler interface {
	Float(r *rand.Rand) float64
}

// Sessions describe a multi-turn run (RunSessions). The zero value of
// every field but Conversations works.
type Sessions struct {
	// Conversations are the sessions' scripts, in arrival order: the
	// first Warmups of them are the warm-up sessions, the others the
	// measured ones.
	Conversations []conversation.Conversation
	// Rate is the session arrival rate in sessions/s; 0 or +Inf starts
	// every session at once (MaxActive permitting). Burstiness is the
	// gamma shape of the gaps as Config.Burstiness. Conversations that
	// carry their own start (Conversation.HasAt, a trace) start then,
	// sped up by Config.TraceSpeed, and Rate is not used.
	Rate, Burstiness float64
	// MaxActive limits the sessions in progress; 0 means no limit. A
	// session waits for a free place before its first request.
	MaxActive int
	// ThinkTime draws the pause between the end of a reply and the next
	// user turn, in seconds; nil means none.
	ThinkTime Sampler
	// MaxTurns caps the user turns of a session; 0 means all of its
	// conversation's.
	MaxTurns int
	// MaxDuration ends a session that has run this long: it starts no
	// further user turn (the one in progress finishes). 0 means no limit.
	MaxDuration time.Duration
	// Warmups is how many of the first conversations run as warm-up
	// sessions before the run's time zero, at most MaxActive at once,
	// with neither arrival schedule nor think time; their records go to
	// Result.Warmups, out of every figure.
	Warmups int
	// Tools, when set, is the JSON array of tool definitions sent with
	// every request. Without it, tool calls in an answer are not
	// followed.
	Tools json.RawMessage
	// ToolLatency draws how long a tool runs before its result is sent,
	// in seconds; nil means no wait.
	ToolLatency Sampler
	// ToolResultTokens draws the length of a tool result in tokens; nil
	// means 64.
	ToolResultTokens Sampler
	// MaxToolRounds caps the requests carrying tool results per user
	// turn; 0 means DefaultMaxToolRounds. An answer with tool calls past
	// the cap is marked Record.ToolCapHit and the session goes on to its
	// next user turn.
	MaxToolRounds int
	// Header names the header carrying the session id; empty means
	// client.DefaultSessionHeader.
	Header string
}

// defaultToolResultTokens is a tool result's length without a sampler.
const defaultToolResultTokens = 64

// check checks the numbers of s.
func (s *Sessions) check() error {
	warm := min(max(s.Warmups, 0), len(s.Conversations))
	switch {
	case len(s.Conversations) == 0:
		return errors.New("sessions: no conversations")
	case s.Warmups < 0 || s.MaxActive < 0 || s.MaxTurns < 0 || s.MaxToolRounds < 0 || s.MaxDuration < 0:
		return errors.New("sessions: warm-ups, max active, max turns, max tool rounds and max duration must not be negative")
	case s.Warmups > MaxSessionWarmups:
		return fmt.Errorf("sessions: %d warm-up sessions is over the maximum %d", s.Warmups, MaxSessionWarmups)
	case warm >= len(s.Conversations):
		return fmt.Errorf("sessions: %d warm-up sessions leave none of the %d conversations to measure", s.Warmups, len(s.Conversations))
	case s.MaxActive > MaxConcurrencyLimit:
		return fmt.Errorf("sessions: max active %d is over the maximum %d", s.MaxActive, MaxConcurrencyLimit)
	case s.MaxTurns > MaxSessionTurns:
		return fmt.Errorf("sessions: max turns %d is over the maximum %d", s.MaxTurns, MaxSessionTurns)
	case s.MaxToolRounds > MaxToolRoundsLimit:
		return fmt.Errorf("sessions: max tool rounds %d is over the maximum %d", s.MaxToolRounds, MaxToolRoundsLimit)
	case s.MaxDuration > MaxTimeout:
		return fmt.Errorf("sessions: max session duration %v is over the maximum %v", s.MaxDuration, MaxTimeout)
	}
	for i := range s.Conversations {
		if len(s.Conversations[i].Turns) == 0 {
			return fmt.Errorf("sessions: conversation %d (%q) has no user turn", i, s.Conversations[i].ID)
		}
	}
	return nil
}

// SendsConversations reports whether backend sends a whole conversation
// (Request.Messages), which sessions need: openai-chat and
// openai-responses.
func SendsConversations(backend string) bool {
	return backend == client.BackendOpenAIChat || backend == client.BackendOpenAIResponses
}

// turns is the number of user turns conversation c sends.
func (s *Sessions) turns(c *conversation.Conversation) int {
	if s.MaxTurns > 0 {
		return min(len(c.Turns), s.MaxTurns)
	}
	return len(c.Turns)
}

// RunSessions runs the multi-turn benchmark of sess with cfg's server,
// client, readiness check, maximum duration and warm connections. cfg's
// request rate, concurrency limit, warm-up requests, ramp-up, LoRA and
// shard do not apply (Sessions has its own arrival, limit and warm-ups)
// and are rejected. Result.Records hold every request of the measured
// sessions, session after session, each in the order sent; a canceled run
// returns what it measured with Result.Stopped set.
func RunSessions(ctx context.Context, cfg Config, sess Sessions) (*Result, error) {
	if err := cfg.normalize(); err != nil {
		return nil, fmt.Errorf("run sessions: %w", err)
	}
	if err := sess.check(); err != nil {
		return nil, fmt.Errorf("run sessions: %w", err)
	}
	switch {
	case cfg.MaxConcurrency > 0 || cfg.NumWarmups > 0 || cfg.RampUp != nil || len(cfg.LoRAModules) > 0 || cfg.Shard.Count > 1 || cfg.TraceArrivals:
		return nil, errors.New("run sessions: concurrency limit, warm-up requests, ramp-up, LoRA modules, trace arrivals and shards are not for sessions (use Sessions.MaxActive, Sessions.Warmups and the conversations' own times)")
	case !SendsConversations(cfg.Backend):
		return nil, fmt.Errorf("run sessions: backend %s sends no conversation; sessions need %s or %s", cfg.Backend, client.BackendOpenAIChat, client.BackendOpenAIResponses)
	}
	warm := sess.Warmups
	measured := sess.Conversations[warm:]
	offsets, sched, err := sessionOffsets(&cfg, &sess, measured)
	if err != nil {
		return nil, fmt.Errorf("run sessions: %w", err)
	}
	c, warmer := cfg.client()
	c.SessionHeader, c.MaxConns = sess.Header, sess.MaxActive
	if cfg.HTTPClient == nil {
		defer c.CloseIdleConnections()
	}
	if warmer != nil {
		defer warmer.Close()
	}
	if cfg.ReadyTimeout > 0 {
		first := sessionProbe(&sess.Conversations[0])
		if err := waitReady(ctx, c, first, cfg.ReadyTimeout, cfg.ReadyInterval); err != nil {
			return nil, fmt.Errorf("run sessions: %w", err)
		}
	}
	res := &Result{Schedule: sched}
	if warm > 0 {
		// Warm-ups: no think time, no progress reports.
		wcfg, wsess := cfg, sess
		wcfg.Progress, wsess.ThinkTime = nil, nil
		w := newSessionRun(ctx, &wcfg, &wsess, c, sess.Conversations[:warm], make([]time.Duration, warm), "warmup-")
		w.run(ctx)
		res.Warmups = w.records()
	}
	if n := sess.MaxActive; n > 0 || warmer != nil {
		if err := cfg.warm(ctx, warmer, min(len(measured), cmpOr(n, len(measured)))); err != nil {
			res.Warnings = append(res.Warnings, err)
		}
	}
	if cfg.Started != nil {
		cfg.Started()
	}
	if !cfg.StartAt.IsZero() {
		if err := sleepUntil(ctx, cfg.StartAt, max(cfg.SpinWindow, 0)); err != nil {
			return nil, fmt.Errorf("run sessions: waiting for the start time: %w", err)
		}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.MaxDuration > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, cfg.MaxDuration, ErrMaxDuration)
		defer stop()
	}
	r := newSessionRun(runCtx, &cfg, &sess, c, measured, offsets, "")
	probe := startHealth()
	r.run(runCtx)
	res.Health = probe.finish()
	res.Start, res.Duration = r.epoch, r.duration
	res.Records = r.records()
	if runCtx.Err() != nil && cut(res.Records) {
		res.Stopped = context.Cause(runCtx)
	}
	if err := toolsCutWarning(&sess, measured, res.Records); err != nil {
		res.Warnings = append(res.Warnings, err)
	}
	return res, nil
}

// toolsCutWarning warns of a run that declares tools, gets no tool call
// and has answers stopped at max_tokens that start as a call does.
// A call cut short comes back as text, so such a run has 0 tool rounds and
// says nothing else: with tool_call_rate 1 and max_tokens 12, the
// simulator streams no text at all. An answer of prose is not
// counted: vLLM's client asks for min_tokens = max_tokens, so every answer
// of a server that calls no tool stops at max_tokens.
func toolsCutWarning(sess *Sessions, convs []conversation.Conversation, recs []metrics.Record) error {
	if len(sess.Tools) == 0 {
		return nil
	}
	ok, cut := 0, 0
	for _, r := range recs {
		if len(r.ToolCalls) > 0 {
			return nil
		}
		if r.Success {
			ok++
			if r.FinishReason == "length" && startsCall(r) {
				cut++
			}
		}
	}
	if cut == 0 {
		return nil
	}
	most := 0
	for _, c := range convs {
		for _, t := range c.Turns {
			most = max(most, t.MaxTokens)
		}
	}
	return fmt.Errorf("sessions: tools are declared, but no answer held a tool call, and %d of %d answers stopped at max_tokens (finish_reason \"length\"; the largest max_tokens is %d) where a call starts: a tool call cut short comes back as text, so the run has 0 tool rounds; give the answers room for a whole call (the simulator's takes about 22 tokens plus tool_call_arg_tokens, 16 by default)",
		cut, ok, most)
}

// startsCall reports whether an answer is the start of a tool call: text
// in a format vLLM's tool parsers read (JSON as Llama 3's and the
// simulator's, Hermes' <tool_call>, Llama 3's <|python_tag|>), or output
// tokens with no text at all, which a streaming tool parser holds back
// until it has read the call's name.
func startsCall(r metrics.Record) bool {
	t := strings.TrimSpace(r.GeneratedText)
	if t == "" {
		return r.OutputTokens > 0
	}
	return strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[{") || strings.HasPrefix(t, "<tool_call>") || strings.HasPrefix(t, "<|python_tag|>")
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// sessionOffsets are the measured sessions' start times from time zero:
// the conversations' own (a trace) or the arrival schedule's.
func sessionOffsets(cfg *Config, s *Sessions, convs []conversation.Conversation) ([]time.Duration, *Schedule, error) {
	timed := 0
	for i := range convs {
		if convs[i].HasAt {
			timed++
		}
	}
	if timed == len(convs) {
		out := make([]time.Duration, len(convs))
		for i := range convs {
			out[i] = time.Duration(float64(convs[i].At) / cfg.TraceSpeed)
			if i > 0 && out[i] < out[i-1] {
				return nil, nil, fmt.Errorf("conversation %d (%q) starts at %v, before the one ahead of it", i, convs[i].ID, convs[i].At)
			}
		}
		return out, nil, nil
	}
	if timed > 0 {
		return nil, nil, fmt.Errorf("%d of %d conversations carry a start time; all or none must", timed, len(convs))
	}
	sched, err := NewSchedule(len(convs), s.Rate, s.Burstiness, nil, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	return sched.Offsets, sched, nil
}

// sessionProbe is the readiness probe of a session run: conversation c's
// first turn, on its own.
func sessionProbe(c *conversation.Conversation) client.Request {
	var msgs []client.Message
	if c.System != "" {
		msgs = append(msgs, client.Message{Role: "system", Content: c.System})
	}
	t := c.Turns[0]
	msgs = append(msgs, client.Message{Role: "user", Content: t.User})
	return client.Request{Messages: msgs, PromptLen: t.UserTokens, OutputLen: t.MaxTokens}
}

// A sessionRun drives one set of sessions: the measured ones, or the
// warm-ups before them.
type sessionRun struct {
	cfg     *Config
	sess    *Sessions
	client  *client.Client
	ctx     context.Context
	convs   []conversation.Conversation
	offsets []time.Duration
	idPre   string
	// slots holds one token per session that may be active, each the
	// time its last holder released it (Record.Free); nil without a limit.
	slots chan time.Duration
	// sessions are the sessions started so far, by index, for stopping
	// the ones waiting when the run ends.
	mu       sync.Mutex
	sessions []*session
	recs     [][]metrics.Record
	done     int
	total    int
	wg       sync.WaitGroup
	epoch    time.Time
	duration time.Duration
}

func newSessionRun(ctx context.Context, cfg *Config, s *Sessions, c *client.Client, convs []conversation.Conversation, offsets []time.Duration, idPre string) *sessionRun {
	r := &sessionRun{cfg: cfg, sess: s, client: c, ctx: ctx, convs: convs, offsets: offsets, idPre: idPre,
		sessions: make([]*session, len(convs)), recs: make([][]metrics.Record, len(convs))}
	if n := s.MaxActive; n > 0 {
		r.slots = make(chan time.Duration, n)
		for range n {
			r.slots <- 0
		}
	}
	for i := range convs {
		r.total += s.turns(&convs[i])
	}
	return r
}

// run starts every session at its offset, once a place is free, and waits
// for all of them to end. When ctx ends, sessions not started get an
// unsent record, waiting ones stop waiting (an unsent record for the
// request they would have sent) and requests in flight are canceled.
func (r *sessionRun) run(ctx context.Context) {
	r.epoch = time.Now()
	r.client.Epoch = r.epoch
	ids := sessionIDs(r.convs, r.cfg.RequestIDPrefix+r.idPre)
	stopWaits := context.AfterFunc(ctx, r.stopWaiting)
	defer stopWaits()
	for i := range r.convs {
		if err := sleepUntil(ctx, r.epoch.Add(r.offsets[i]), r.spin()); err != nil {
			r.unsentFrom(i, ids)
			break
		}
		free := r.offsets[i]
		if r.slots != nil {
			var released time.Duration
			select {
			case released = <-r.slots:
			default:
				select {
				case released = <-r.slots:
				case <-ctx.Done():
					r.unsentFrom(i, ids)
				}
			}
			if ctx.Err() != nil {
				if r.recs[i] == nil {
					r.slots <- released
					r.unsentFrom(i, ids)
				}
				break
			}
			free = max(free, released)
		}
		s := r.newSession(i, ids[i])
		r.wg.Add(1)
		go s.send(r.offsets[i], free)
	}
	r.wg.Wait()
	r.duration = time.Since(r.epoch)
}

// spin is the precise-wait window of session starts.
func (r *sessionRun) spin() time.Duration { return max(r.cfg.SpinWindow, 0) }

// unsentFrom records sessions from..end as never started.
func (r *sessionRun) unsentFrom(from int, ids []string) {
	for j := from; j < len(r.convs); j++ {
		c := &r.convs[j]
		r.recs[j] = []metrics.Record{{
			RequestID: requestID(ids[j], 0, 0), SessionID: ids[j], Scheduled: r.offsets[j], Dispatched: r.offsets[j], Free: r.offsets[j],
			PromptLen: c.Turns[0].UserTokens, Unsent: true, Failure: metrics.FailureCanceled,
			Error: "not sent: run stopped before the session started",
		}}
	}
}

// stopWaiting stops every session waiting for its next request.
func (r *sessionRun) stopWaiting() {
	r.mu.Lock()
	ss := append([]*session(nil), r.sessions...)
	r.mu.Unlock()
	for _, s := range ss {
		if s != nil {
			s.stopWait()
		}
	}
}

// finish ends session s: its records join the run's, its place frees.
func (r *sessionRun) finish(s *session) {
	r.mu.Lock()
	r.recs[s.idx] = s.recs
	r.sessions[s.idx] = nil
	r.mu.Unlock()
	if r.slots != nil {
		r.slots <- time.Since(r.epoch)
	}
	r.wg.Done()
}

// turnDone counts a user turn finished (or given up) for the progress
// hook.
func (r *sessionRun) turnDone(n int) {
	if r.cfg.Progress == nil || n == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done += n
	r.cfg.Progress(r.done, r.total)
}

// records are the run's records, session after session.
func (r *sessionRun) records() []metrics.Record {
	n := 0
	for _, rs := range r.recs {
		n += len(rs)
	}
	out := make([]metrics.Record, 0, n)
	for _, rs := range r.recs {
		out = append(out, rs...)
	}
	return out
}

// sessionIDs names each session: prefix plus the conversation's id when
// the ids are unique and not empty, else prefix plus "session-<index>".
func sessionIDs(convs []conversation.Conversation, prefix string) []string {
	seen := make(map[string]bool, len(convs))
	unique := true
	for i := range convs {
		id := convs[i].ID
		if id == "" || seen[id] {
			unique = false
			break
		}
		seen[id] = true
	}
	out := make([]string, len(convs))
	for i := range convs {
		if unique {
			out[i] = prefix + convs[i].ID
		} else {
			out[i] = prefix + "session-" + strconv.Itoa(i)
		}
	}
	return out
}

// requestID is the id of a session's request: the session's id, the turn
// and, for a tool round, the round.
func requestID(session string, turn, round int) string {
	id := session + "-" + strconv.Itoa(turn)
	if round > 0 {
		id += "-tool" + strconv.Itoa(round)
	}
	return id
}
