package metrics

import (
	"slices"
	"time"
)

// Session metrics exist only for a run whose records carry a SessionID
// (Summary.Sessions not nil); Value does not know them otherwise, so that a
// bound on p99_ttft_later_turns_ms fails as MISSING on a single-turn run
// instead of passing on nothing.
//
// The latency ones are written "<stat>_<metric>_ms" like vLLM's:
//
//	ttft_first_turn   TTFT of each session's first request (turn 0, no tool round)
//	ttft_later_turns  TTFT of every other request of a session (later turns and tool rounds)
//	session_duration  from a session's first send to the end of its last answer
//
// and the scalars are sessionScalars.
var sessionMetrics = []string{"ttft_first_turn", "ttft_later_turns", "session_duration"}

// Session scalar names.
const (
	// SessionCount is the number of sessions that sent a request.
	SessionCount = "sessions"
	// SessionGoodputRatio is the share of those sessions in which every
	// request succeeded and met the goodput SLO (slo.goodput); unknown
	// without one.
	SessionGoodputRatio = "session_goodput_ratio"
	// ToolRounds is the number of requests that carried tool results.
	ToolRounds = "tool_rounds"
	// MeanToolRounds is ToolRounds per user turn sent.
	MeanToolRounds = "mean_tool_rounds"
	// ToolCapHits is the number of requests answered with tool calls
	// after the last tool round a turn allows.
	ToolCapHits = "tool_cap_hits"
)

// sessionScalars are the session scalar names, in the order the result
// JSON writes them.
var sessionScalars = []string{SessionCount, SessionGoodputRatio, ToolRounds, MeanToolRounds, ToolCapHits}

// SessionStats summarise the sessions of a multi-turn run.
type SessionStats struct {
	// Sessions is the number of sessions that sent at least one request.
	Sessions int
	// Good is the number of them in which every request succeeded and met
	// Options.Goodput (0 without goodput SLOs).
	Good int
	// UserTurns is the number of requests that opened a user turn
	// (ToolRound 0), ToolRounds the number that carried tool results.
	UserTurns, ToolRounds int
	// ToolCapHits counts the requests with Record.ToolCapHit.
	ToolCapHits int
	// TTFTFirstTurn is the TTFT of each session's first request,
	// TTFTLaterTurns that of every other successful request of a session.
	TTFTFirstTurn, TTFTLaterTurns Stats
	// Duration is each session's duration.
	Duration Stats
}

// summarizeSessions computes the session statistics of records, nil when
// no record belongs to a session. Unsent records are left out.
func summarizeSessions(records []Record, goodput map[string]float64) *SessionStats {
	type span struct {
		from, to time.Duration
		good     bool
	}
	spans := map[string]*span{}
	var order []string
	st := &SessionStats{}
	var first, later []time.Duration
	for i := range records {
		r := &records[i]
		if r.Unsent || r.SessionID == "" {
			continue
		}
		sp := spans[r.SessionID]
		if sp == nil {
			sp = &span{from: r.Start, to: r.Start, good: true}
			spans[r.SessionID] = sp
			order = append(order, r.SessionID)
		}
		sp.from, sp.to = min(sp.from, r.Start), max(sp.to, r.Start+r.Latency)
		sp.good = sp.good && r.Success && meetsGoodput(r, goodput)
		if r.ToolRound == 0 {
			st.UserTurns++
		} else {
			st.ToolRounds++
		}
		if r.ToolCapHit {
			st.ToolCapHits++
		}
		if !r.Success {
			continue
		}
		if r.Turn == 0 && r.ToolRound == 0 {
			first = append(first, r.TTFT)
		} else {
			later = append(later, r.TTFT)
		}
	}
	if len(order) == 0 {
		return nil
	}
	durs := make([]time.Duration, len(order))
	for i, id := range order {
		sp := spans[id]
		durs[i] = sp.to - sp.from
		if sp.good && len(goodput) > 0 {
			st.Good++
		}
	}
	st.Sessions = len(order)
	st.TTFTFirstTurn, st.TTFTLaterTurns = newDurationStats(first), newDurationStats(later)
	st.Duration = newDurationStats(durs)
	return st
}

// meetsGoodput reports whether a successful request meets every goodput
// SLO (milliseconds), as goodCount judges it.
func meetsGoodput(r *Record, slo map[string]float64) bool {
	for k, limit := range slo {
		var v float64
		switch k {
		case "ttft":
			v = seconds(r.TTFT)
		case "tpot":
			v = r.TPOTSeconds()
		case "e2el":
			v = seconds(r.Latency)
		default:
			continue
		}
		if !(limit/1000 >= v) {
			return false
		}
	}
	return true
}

// sessionStats returns the Stats of a session latency metric.
func (s *SessionStats) stats(metric string) (Stats, bool) {
	if s == nil {
		return Stats{}, false
	}
	switch metric {
	case "ttft_first_turn":
		return s.TTFTFirstTurn, true
	case "ttft_later_turns":
		return s.TTFTLaterTurns, true
	case "session_duration":
		return s.Duration, true
	}
	return Stats{}, false
}

// value answers a session scalar name.
func (s *Summary) sessionValue(name string) (float64, bool) {
	st := s.Sessions
	if st == nil {
		return 0, false
	}
	switch name {
	case SessionCount:
		return float64(st.Sessions), true
	case SessionGoodputRatio:
		if len(s.Options.Goodput) == 0 || st.Sessions == 0 {
			return 0, false
		}
		return float64(st.Good) / float64(st.Sessions), true
	case ToolRounds:
		return float64(st.ToolRounds), true
	case MeanToolRounds:
		if st.UserTurns == 0 {
			return 0, true
		}
		return float64(st.ToolRounds) / float64(st.UserTurns), true
	case ToolCapHits:
		return float64(st.ToolCapHits), true
	}
	return 0, false
}

// setSessions writes a session run's keys into the result object.
func (s *Summary) setSessions(o *object) {
	if s.Sessions == nil {
		return
	}
	for _, m := range sessionMetrics {
		s.setStats(o, m)
	}
	for _, n := range sessionScalars {
		if v, ok := s.sessionValue(n); ok {
			if n == SessionGoodputRatio || n == MeanToolRounds {
				o.set(n, v)
			} else {
				o.set(n, int(v))
			}
		} else {
			o.set(n, nil)
		}
	}
}

// A TurnTTFT is the TTFT of the successful requests at one turn position
// of a session.
type TurnTTFT struct {
	// Turn is the 0-based user turn.
	Turn int
	// Stats are the TTFTs of that turn's requests (tool rounds included).
	Stats Stats
}

// TTFTByTurn groups the TTFT of the successful session requests by turn
// position, in turn order; nil when no record belongs to a session.
func TTFTByTurn(records []Record) []TurnTTFT {
	byTurn := map[int][]time.Duration{}
	for i := range records {
		r := &records[i]
		if r.SessionID == "" || !r.Success {
			continue
		}
		byTurn[r.Turn] = append(byTurn[r.Turn], r.TTFT)
	}
	if len(byTurn) == 0 {
		return nil
	}
	turns := make([]int, 0, len(byTurn))
	for t := range byTurn {
		turns = append(turns, t)
	}
	slices.Sort(turns)
	out := make([]TurnTTFT, len(turns))
	for i, t := range turns {
		out[i] = TurnTTFT{Turn: t, Stats: newDurationStats(byTurn[t])}
	}
	return out
}
