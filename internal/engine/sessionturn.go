package engine

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/metrics"
)

// A session is one conversation in progress. Between two requests (think
// time, a tool's latency) it holds no goroutine, only a timer: an idle
// session costs this struct, its timer, its random source and its
// history, whose texts are the strings the conversation and the server's
// answers already are (appending a message copies no text).
type session struct {
	run  *sessionRun
	idx  int
	id   string
	conv *conversation.Conversation
	rng  *rand.Rand
	// msgs is the history, append-only: every request sends all of it.
	msgs []client.Message
	recs []metrics.Record
	// turn is the user turn in progress, round its tool round; turns is
	// how many user turns the session sends.
	turn, round, turns int
	// tokens is the history's length in tokens as counted here (the
	// record's PromptLen: user turns, answers, tool results; the server's
	// count, with its chat template, is in ServerPromptTokens).
	tokens int
	// began is when the session's first request went out.
	began time.Duration

	mu sync.Mutex
	// timer is the wait for the next request (nil when none), next the
	// time that request is due.
	timer *time.Timer
	next  time.Duration
}

// newSession registers session i, named id, with its system message.
func (r *sessionRun) newSession(i int, id string) *session {
	c := &r.convs[i]
	s := &session{run: r, idx: i, id: id, conv: c, turns: r.sess.turns(c),
		rng: rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(i)^0x5e55))}
	if c.System != "" {
		s.msgs = append(s.msgs, client.Message{Role: "system", Content: c.System})
		if t := r.cfg.Tokenizer; t != nil {
			s.tokens = t.Count(c.System)
		}
	}
	r.mu.Lock()
	r.sessions[i] = s
	r.mu.Unlock()
	return s
}

// send sends the session's next request, due at sched and free to go at
// free, then acts on the answer. A request opening a user turn first
// appends the user's message.
func (s *session) send(sched, free time.Duration) {
	r := s.run
	if r.ctx.Err() != nil {
		s.unsent(sched, "not sent: run stopped")
		return
	}
	if s.round == 0 {
		t := &s.conv.Turns[s.turn]
		s.msgs = append(s.msgs, client.Message{Role: "user", Content: t.User})
		s.tokens += t.UserTokens
	}
	p := r.client.Prepare(client.Request{
		Messages:  s.msgs,
		PromptLen: s.tokens,
		OutputLen: s.conv.Turns[s.turn].MaxTokens,
		RequestID: requestID(s.id, s.turn, s.round),
		SessionID: s.id,
		Tools:     r.sess.Tools,
	})
	s.recs = append(s.recs, metrics.Record{})
	rec := &s.recs[len(s.recs)-1]
	r.client.DoPrepared(r.ctx, &p, rec)
	rec.Scheduled, rec.Dispatched, rec.Free = sched, sched, free
	rec.SessionID, rec.Turn, rec.ToolRound = s.id, s.turn, s.round
	if len(s.recs) == 1 {
		s.began = rec.Start
	}
	s.answered(rec)
}

// answered acts on the answer rec: a failure ends the session (as vLLM's
// client drops the conversation); tool calls, within the cap, get their
// results after a tool latency; otherwise the next user turn follows a
// think time.
func (s *session) answered(rec *metrics.Record) {
	r := s.run
	end := time.Since(r.epoch)
	if !rec.Success {
		r.turnDone(s.turns - s.turn)
		s.end()
		return
	}
	s.tokens += rec.OutputTokens
	if calls := rec.ToolCalls; len(calls) > 0 && len(r.sess.Tools) > 0 {
		if s.round < s.maxRounds() {
			s.msgs = append(s.msgs, client.Message{Role: "assistant", Content: rec.GeneratedText, ToolCalls: calls})
			for _, c := range calls {
				text, n := s.toolResult()
				s.msgs = append(s.msgs, client.Message{Role: "tool", Content: text, ToolCallID: c.ID})
				s.tokens += n
			}
			s.round++
			s.wait(end + s.draw(r.sess.ToolLatency))
			return
		}
		// Past the cap the calls get no results: the history keeps the
		// answer's text only, so that it stays a valid conversation.
		rec.ToolCapHit = true
	}
	s.msgs = append(s.msgs, client.Message{Role: "assistant", Content: rec.GeneratedText})
	s.turn, s.round = s.turn+1, 0
	r.turnDone(1)
	if s.turn >= s.turns || (r.sess.MaxDuration > 0 && end-s.began >= r.sess.MaxDuration) {
		r.turnDone(s.turns - s.turn)
		s.end()
		return
	}
	s.wait(end + s.draw(r.sess.ThinkTime))
}

// maxRounds is the cap on tool rounds per user turn.
func (s *session) maxRounds() int {
	if n := s.run.sess.MaxToolRounds; n > 0 {
		return n
	}
	return DefaultMaxToolRounds
}

// draw draws a wait in seconds from d (none without one), as a duration
// within [0, MaxTimeout].
func (s *session) draw(d Sampler) time.Duration {
	if d == nil {
		return 0
	}
	v := d.Float(s.rng)
	if !(v > 0) {
		return 0
	}
	return time.Duration(math.Min(v*float64(time.Second), float64(MaxTimeout)))
}

// toolResult makes a tool result of a drawn length: random tokens of the
// run's tokenizer decoded to text (re-tokenized, the count may differ by
// a few), or words without a tokenizer. It returns the text and the
// tokens drawn.
func (s *session) toolResult() (string, int) {
	n := defaultToolResultTokens
	if d := s.run.sess.ToolResultTokens; d != nil {
		v := d.Float(s.rng)
		n = int(math.Min(math.Max(math.Round(v), 1), MaxToolResultTokens))
	}
	tok := s.run.cfg.Tokenizer
	if tok == nil || tok.BaseVocabSize() == 0 {
		return strings.Repeat(" data", n), n
	}
	ids := make([]int, n)
	vocab := tok.BaseVocabSize()
	for i := range ids {
		ids[i] = s.rng.IntN(vocab)
	}
	return tok.Decode(ids, true), n
}

// wait arranges for the next request at at (from the run's time zero),
// on a timer that holds no goroutine until it fires.
func (s *session) wait(at time.Duration) {
	r := s.run
	s.mu.Lock()
	s.next = at
	if r.ctx.Err() != nil {
		s.mu.Unlock()
		s.unsent(at, "not sent: run stopped")
		return
	}
	s.timer = time.AfterFunc(time.Until(r.epoch.Add(at)), s.fire)
	s.mu.Unlock()
}

// fire sends the request the session waited for.
func (s *session) fire() {
	s.mu.Lock()
	s.timer = nil
	at := s.next
	s.mu.Unlock()
	s.send(at, at)
}

// stopWait ends a waiting session when the run stops: the request it
// waited for is recorded as unsent.
func (s *session) stopWait() {
	s.mu.Lock()
	t := s.timer
	s.timer = nil
	at := s.next
	s.mu.Unlock()
	if t != nil && t.Stop() {
		s.unsent(at, "not sent: run stopped while the session waited")
	}
}

// unsent records the request due at sched as never sent and ends the
// session.
func (s *session) unsent(sched time.Duration, why string) {
	tokens := s.tokens
	if s.round == 0 && s.turn < len(s.conv.Turns) {
		tokens += s.conv.Turns[s.turn].UserTokens
	}
	s.recs = append(s.recs, metrics.Record{
		RequestID: requestID(s.id, s.turn, s.round), SessionID: s.id, Turn: s.turn, ToolRound: s.round,
		Scheduled: sched, Dispatched: sched, Free: sched, PromptLen: tokens,
		Unsent: true, Failure: metrics.FailureCanceled, Error: why,
	})
	s.run.turnDone(s.turns - s.turn)
	s.end()
}

// end hands the session's records to the run and frees its place.
func (s *session) end() {
	s.msgs = nil
	s.run.finish(s)
}
