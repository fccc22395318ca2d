package sim

import (
	"net/http"
	"strconv"
	"time"
)

// A Step is one engine step as GET /debug/steps reports it: the batching
// ground truth behind the per-request token times.
type Step struct {
	// StartMS is when the step started, in ms since the server started.
	StartMS float64 `json:"start_ms"`
	// DurationMS is the step's modelled duration.
	DurationMS float64 `json:"duration_ms"`
	// Seqs is the number of sequences in the step.
	Seqs int `json:"seqs"`
	// PrefillTokens are prompt (or recomputed) tokens; DecodeSeqs the
	// sequences decoding one token.
	PrefillTokens int `json:"prefill_tokens"`
	DecodeSeqs    int `json:"decode_seqs"`
	// ContextTokens are the tokens already computed that the step attends to.
	ContextTokens int `json:"context_tokens"`
	// Waiting is the queue left behind; Preempted the sequences preempted
	// to make room in this step.
	Waiting   int `json:"waiting"`
	Preempted int `json:"preempted"`
	// KVUsage is the fraction of KV blocks in use once the step is planned.
	KVUsage float64 `json:"kv_usage"`
	// DraftTokens are the draft tokens the step verified and
	// AcceptedTokens those it accepted (speculative decoding); absent
	// without it.
	DraftTokens    int `json:"draft_tokens,omitempty"`
	AcceptedTokens int `json:"accepted_tokens,omitempty"`
	// LoadedBlocks are the KV blocks the step loaded back from the offload
	// tier; absent when none.
	LoadedBlocks int `json:"loaded_blocks,omitempty"`
}

// stepLogSize is how many recent steps the engine remembers.
const stepLogSize = 4096

// stepLog is a ring of the most recent steps, guarded by engine.mu.
type stepLog struct {
	ring []Step
	next int
}

func (l *stepLog) add(s Step) {
	if len(l.ring) < stepLogSize {
		l.ring = append(l.ring, s)
	} else {
		l.ring[l.next] = s
	}
	l.next = (l.next + 1) % stepLogSize
}

// setLastAccepted records the accepted draft tokens of the latest step,
// known only once it has run.
func (l *stepLog) setLastAccepted(n int) {
	if len(l.ring) == 0 {
		return
	}
	i := (l.next - 1 + len(l.ring)) % len(l.ring)
	if len(l.ring) < stepLogSize {
		i = len(l.ring) - 1
	}
	l.ring[i].AcceptedTokens = n
}

// last returns up to n of the most recent steps, oldest first.
func (l *stepLog) last(n int) []Step {
	n = min(n, len(l.ring))
	out := make([]Step, 0, n)
	for i := len(l.ring) - n; i < len(l.ring); i++ {
		idx := i
		if len(l.ring) == stepLogSize {
			idx = (l.next + i) % stepLogSize
		}
		out = append(out, l.ring[idx])
	}
	return out
}

// describe counts a planned step's work, before it runs (engine
// goroutine); the step's duration is modelled from these counts.
func (e *engine) describe(start time.Time, plan []stepPlan, preempted int) Step {
	st := Step{
		StartMS: float64(start.Sub(e.started)) / 1e6,
		Seqs:    len(plan), Waiting: len(e.waiting), Preempted: preempted, KVUsage: e.kv.usage(),
	}
	st.LoadedBlocks, e.loaded = e.loaded, 0
	for _, ps := range plan {
		st.DraftTokens += ps.draft
		st.ContextTokens += ps.s.numComputed
		if ps.decoding() {
			st.DecodeSeqs++
		} else {
			st.PrefillTokens += ps.numNew
		}
	}
	return st
}

// record logs a step that lasts d.
func (e *engine) record(st Step, d time.Duration) {
	st.DurationMS = float64(d) / 1e6
	e.mu.Lock()
	e.steps.add(st)
	e.mu.Unlock()
}

// Steps returns up to n of the engine's most recent steps, oldest first
// (at most 4096 are kept).
func (s *Server) Steps(n int) []Step {
	s.eng.mu.Lock()
	defer s.eng.mu.Unlock()
	return s.eng.steps.last(n)
}

func (s *Server) handleSteps(w http.ResponseWriter, r *http.Request) {
	n := stepLogSize
	if v := r.URL.Query().Get("last"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 {
			writeError(w, newError(http.StatusBadRequest, "last must be a non-negative integer, got %q", v))
			return
		}
		n = k
	}
	writeJSON(w, http.StatusOK, s.Steps(n))
}
