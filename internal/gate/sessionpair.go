package gate

import (
	"fmt"
	"math"
	"sort"
)

// A requestMatch is one request of a pair: its index in base's result
// file and in head's, and its scheduled start offset in seconds.
type requestMatch struct {
	b, h  int
	start float64
}

// sessionKey names one request of a session run: the session, the user
// turn and the tool round (0 for the turn's first request).
type sessionKey struct {
	id          string
	turn, round int
}

func (k sessionKey) String() string {
	return fmt.Sprintf("session %q turn %d tool round %d", k.id, k.turn, k.round)
}

// before orders the requests of one session as they were sent.
func (k sessionKey) before(o sessionKey) bool {
	if k.turn != o.turn {
		return k.turn < o.turn
	}
	return k.round < o.round
}

// matchRequests pairs the requests of base's and head's result files of
// one paired run.
//
// Without sessions, both sides sent one schedule: request i of base is
// request i of head, and the two files must have the same number of
// requests and, request by request, the same scheduled offset.
//
// A session run's files (session_ids) cannot: the next turn of a session
// is scheduled from the answer to the previous one, so the two sides'
// schedules differ by their answers' times. Their requests pair by
// (session, turn, tool round) instead, and both sides must hold the same
// keys, with one exception: a session ends at its first failed request
// (as vLLM's multi-turn client drops the conversation), so the requests
// one side sent after the request that failed on the other are left
// out: that side's failure is paired and counts once, as a failure. A
// pair's start offset is the mean of the two sides' scheduled offsets,
// and the matches come in the order of it, so that the steady-state
// window and the bootstrap's time blocks see the run in time order.
func matchRequests(b, h *pairedResult) ([]requestMatch, error) {
	if (b.SessionIDs == nil) != (h.SessionIDs == nil) {
		side := "base"
		if b.SessionIDs == nil {
			side = "head"
		}
		return nil, fmt.Errorf("not a pair: only %s is a session run (session_ids); run both sides with one scenario and this servegate", side)
	}
	if b.SessionIDs == nil {
		return matchSchedule(b, h)
	}
	bk, err := b.sessionKeys()
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	hk, err := h.sessionKeys()
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	bIdx, hIdx := keyIndex(bk), keyIndex(hk)
	bEnd, hEnd := b.failedEnds(bk), h.failedEnds(hk)
	var out []requestMatch
	for i, k := range bk {
		j, ok := hIdx[k]
		if !ok {
			if e, ended := hEnd[k.id]; ended && e.before(k) {
				continue // head's session ended on a failure before it
			}
			return nil, fmt.Errorf("not a pair: %s is in base, not in head; a paired run sends both sides the same conversations", k)
		}
		out = append(out, requestMatch{b: i, h: j, start: (b.schedule()[i] + h.schedule()[j]) / 2})
	}
	for _, k := range hk {
		if _, ok := bIdx[k]; ok {
			continue
		}
		if e, ended := bEnd[k.id]; ended && e.before(k) {
			continue // base's session ended on a failure before it
		}
		return nil, fmt.Errorf("not a pair: %s is in head, not in base; a paired run sends both sides the same conversations", k)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, nil
}

// matchSchedule pairs request i of base with request i of head, checking
// that the two were scheduled at the same offset.
func matchSchedule(b, h *pairedResult) ([]requestMatch, error) {
	if len(b.TTFTs) != len(h.TTFTs) {
		return nil, fmt.Errorf("not a pair: base has %d requests, head %d; a paired run sends one schedule to both", len(b.TTFTs), len(h.TTFTs))
	}
	out := make([]requestMatch, len(b.TTFTs))
	for i := range b.TTFTs {
		sb, sh := b.schedule()[i], h.schedule()[i]
		if math.Abs(sb-sh) > scheduleTolerance {
			return nil, fmt.Errorf("not a pair: request %d is scheduled at %.6f s in base, %.6f s in head; a paired run sends one schedule to both", i, sb, sh)
		}
		out[i] = requestMatch{b: i, h: i, start: sb}
	}
	return out, nil
}

// sessionKeys returns each request's key, checking that no key repeats.
func (r *pairedResult) sessionKeys() ([]sessionKey, error) {
	keys := make([]sessionKey, len(r.SessionIDs))
	seen := make(map[sessionKey]int, len(keys))
	for i, id := range r.SessionIDs {
		k := sessionKey{id: id, turn: r.SessionTurns[i]}
		if r.ToolRounds != nil {
			k.round = r.ToolRounds[i]
		}
		if k.turn < 0 || k.round < 0 {
			return nil, fmt.Errorf("read result: request %d: %s: want a turn and a tool round >= 0", i, k)
		}
		if first, dup := seen[k]; dup {
			return nil, fmt.Errorf("read result: requests %d and %d are both %s", first, i, k)
		}
		seen[k] = i
		keys[i] = k
	}
	return keys, nil
}

// keyIndex maps each key to its request's index.
func keyIndex(keys []sessionKey) map[sessionKey]int {
	m := make(map[sessionKey]int, len(keys))
	for i, k := range keys {
		m[k] = i
	}
	return m
}

// failedEnds returns, for each session whose last request failed (or
// was never sent), that request's key: the session sent nothing after.
func (r *pairedResult) failedEnds(keys []sessionKey) map[string]sessionKey {
	last := map[string]int{}
	for i, k := range keys {
		if j, ok := last[k.id]; !ok || keys[j].before(k) {
			last[k.id] = i
		}
	}
	out := map[string]sessionKey{}
	for id, i := range last {
		if r.Errors[i] != "" {
			out[id] = keys[i]
		}
	}
	return out
}
