package pipeline

import (
	"context"
	"fmt"

	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/tokenizer"
)

// prepareSessions loads a session plan's conversations with tok.
func (p *Plan) prepareSessions(ctx context.Context, tok *tokenizer.Tokenizer) error {
	convs, err := conversation.Load(ctx, p.Sessions.Source, p.SessionsDir, tok, p.Sessions.Seed)
	if err != nil {
		if p.Name != "" {
			return fmt.Errorf("scenario %s: %w", p.Name, err)
		}
		return err
	}
	if len(convs) <= p.Sessions.Warmups {
		return fmt.Errorf("scenario %s: sessions.source gave %d conversations, and sessions.warmups takes %d of them as warm-ups: none is left to measure", p.Name, len(convs), p.Sessions.Warmups)
	}
	p.tok, p.convs = tok, convs
	return nil
}

// Conversations returns a session plan's prepared conversations (nil
// before Prepare, and for a single-turn plan).
func (p *Plan) Conversations() []conversation.Conversation { return p.convs }

// engineSessions maps the plan's session keys onto the engine's.
func (p *Plan) engineSessions() engine.Sessions {
	s := p.Sessions
	out := engine.Sessions{
		Conversations: p.convs,
		Rate:          s.Arrival.Rate,
		Burstiness:    s.Arrival.Burstiness,
		MaxActive:     s.MaxActive,
		MaxTurns:      s.MaxTurns,
		MaxDuration:   s.MaxDuration.D(),
		Warmups:       s.Warmups,
		Header:        s.Header,
		Tools:         s.ToolsJSON(),
	}
	if s.ThinkTime != nil {
		out.ThinkTime = *s.ThinkTime
	}
	if t := s.Tools; t != nil {
		out.MaxToolRounds = t.MaxRounds
		if t.Latency != nil {
			out.ToolLatency = *t.Latency
		}
		if t.ResultTokens != nil {
			out.ToolResultTokens = *t.ResultTokens
		}
	}
	return out
}
