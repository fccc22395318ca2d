package sim

import (
	"container/list"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// truthData is what the server knows of one request's timing. Times are
// offsets from the request's arrival (when its body was parsed) on the
// monotonic clock.
type truthData struct {
	// FirstScheduled is when the engine first gave the request a step.
	FirstScheduled time.Duration
	// TokenTimes holds, for every generated token, the end of the step that
	// produced it.
	TokenTimes []time.Duration
	// ChunkTimes holds when each output chunk was written and flushed to
	// the connection; ChunkTokens how many tokens it carried.
	ChunkTimes  []time.Duration
	ChunkTokens []int
	// Finished is when the engine finished the request.
	Finished time.Duration
	// Preemptions counts how often the request lost its KV blocks.
	Preemptions int
	// CachedTokens is the prompt prefix found in the prefix cache.
	CachedTokens int
}

// A Truth is the ground truth of one request, as GET /debug/requests/{id}
// serves it. Times are in milliseconds from the request's arrival.
type Truth struct {
	// ID is the request id (x-request-id, or the one the server made).
	ID string `json:"id"`
	// Endpoint is the path the request came in on.
	Endpoint string `json:"endpoint"`
	// Arrival is the wall-clock arrival time, Unix nanoseconds.
	Arrival int64 `json:"arrival_unix_ns"`
	// PromptTokens and OutputTokens count the request's tokens.
	PromptTokens int `json:"prompt_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CachedTokens is the prompt prefix served by the prefix cache.
	CachedTokens int `json:"cached_tokens"`
	// Preemptions counts the times the request was preempted.
	Preemptions int `json:"preemptions"`
	// FinishReason is "length", "stop", "abort" or "" while running.
	FinishReason string `json:"finish_reason"`
	// Fault names the fault injected into the request, "" for none.
	Fault string `json:"fault,omitempty"`
	// QueueMS is the time until the request's first step started.
	QueueMS float64 `json:"queue_ms"`
	// FinishedMS is when the engine finished the request (0 while running).
	FinishedMS float64 `json:"finished_ms"`
	// TokenMS holds when each token was produced (its step's end).
	TokenMS []float64 `json:"token_ms"`
	// ChunkMS holds when each output chunk was flushed to the client, and
	// ChunkTokens the tokens in it. A client's TTFT should equal ChunkMS[0]
	// plus the network, and its ITLs the differences of ChunkMS.
	ChunkMS     []float64 `json:"chunk_ms"`
	ChunkTokens []int     `json:"chunk_tokens"`
	// TTFTMS is ChunkMS[0] (TokenMS[0] for requests not streamed).
	TTFTMS float64 `json:"ttft_ms"`
	// ITLMS holds the differences of ChunkMS (of TokenMS when not streamed).
	ITLMS []float64 `json:"itl_ms"`
}

// truthStore keeps the ground truth of the most recent requests.
type truthStore struct {
	mu    sync.Mutex
	limit int
	byID  map[string]*list.Element
	order *list.List // of *seqRecord, oldest first
}

// seqRecord ties a seq to what is known of it outside the engine.
type seqRecord struct {
	s        *seq
	endpoint string
	wall     time.Time
	fault    string
}

func newTruthStore(limit int) *truthStore {
	return &truthStore{limit: limit, byID: map[string]*list.Element{}, order: list.New()}
}

func (t *truthStore) add(r *seqRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byID[r.s.id]; ok {
		t.order.Remove(e)
	}
	t.byID[r.s.id] = t.order.PushBack(r)
	for t.order.Len() > t.limit {
		old := t.order.Remove(t.order.Front()).(*seqRecord)
		if t.byID[old.s.id] != nil && t.byID[old.s.id].Value == old {
			delete(t.byID, old.s.id)
		}
	}
}

func (t *truthStore) get(id string) (Truth, bool) {
	t.mu.Lock()
	e, ok := t.byID[id]
	t.mu.Unlock()
	if !ok {
		return Truth{}, false
	}
	r := e.Value.(*seqRecord)
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	out := Truth{
		ID: s.id, Endpoint: r.endpoint, Arrival: r.wall.UnixNano(), Fault: r.fault,
		PromptTokens: s.promptLen, OutputTokens: len(s.truth.TokenTimes),
		CachedTokens: s.truth.CachedTokens, Preemptions: s.truth.Preemptions,
		QueueMS: ms(s.truth.FirstScheduled), FinishedMS: ms(s.truth.Finished), ChunkTokens: append([]int{}, s.truth.ChunkTokens...),
		TokenMS: []float64{}, ChunkMS: []float64{}, ITLMS: []float64{},
	}
	if s.finished {
		out.FinishReason = s.finish
	}
	for _, d := range s.truth.TokenTimes {
		out.TokenMS = append(out.TokenMS, ms(d))
	}
	for _, d := range s.truth.ChunkTimes {
		out.ChunkMS = append(out.ChunkMS, ms(d))
	}
	ref := out.ChunkMS
	if len(ref) == 0 {
		ref = out.TokenMS
	}
	if len(ref) > 0 {
		out.TTFTMS = ref[0]
		for i := 1; i < len(ref); i++ {
			out.ITLMS = append(out.ITLMS, ref[i]-ref[i-1])
		}
	}
	return out, true
}

// Truth returns the ground truth of a recent request by its id: the
// x-request-id it was sent with, or the response id (cmpl-..., chatcmpl-...).
func (s *Server) Truth(id string) (Truth, bool) {
	if t, ok := s.truth.get(id); ok {
		return t, true
	}
	for _, p := range []string{"cmpl-", "chatcmpl-", "embd-", "rerank-"} {
		if rest, ok := strings.CutPrefix(id, p); ok {
			return s.truth.get(rest)
		}
	}
	return Truth{}, false
}

func (s *Server) handleTruth(w http.ResponseWriter, r *http.Request) {
	t, ok := s.Truth(r.PathValue("id"))
	if !ok {
		writeError(w, newError(http.StatusNotFound, "no request %q in the last %d", r.PathValue("id"), s.truth.limit))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(t)
}
