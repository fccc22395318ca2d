package sim

import (
	"cmp"
	"container/list"
	"encoding/json"
	"net/http"
	"slices"
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
	// OffloadTokens is the part of CachedTokens loaded back from the
	// offload tier.
	OffloadTokens int
	// SpecAccepted holds, per speculative decoding step, the draft tokens
	// accepted.
	SpecAccepted []int
}

// A Truth is the ground truth of one request, as GET /debug/requests/{id}
// serves it. Times are in milliseconds from the request's arrival.
type Truth struct {
	// ID is the request id (x-request-id, or the one the server made).
	ID string `json:"id"`
	// Endpoint is the path the request came in on.
	Endpoint string `json:"endpoint"`
	// Arrival is the wall-clock arrival time, Unix nanoseconds: when the
	// handler took the request, which every other time here counts from.
	Arrival int64 `json:"arrival_unix_ns"`
	// IntakeMS is how long before Arrival the request reached the
	// server's socket (the kernel's receive time of its first read; see
	// StampListener): time it waited for the server that a client's TTFT
	// includes. Absent when not known (another platform, a server not on
	// a StampListener, the kernel's stamping not yet on).
	IntakeMS *float64 `json:"intake_ms,omitempty"`
	// PromptTokens and OutputTokens count the request's tokens.
	PromptTokens int `json:"prompt_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CachedTokens is the prompt prefix served by the prefix cache.
	CachedTokens int `json:"cached_tokens"`
	// ReasoningTokens counts the output tokens streamed as reasoning
	// (reasoning_share); absent when none.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// ToolCalls counts the choices answered with a tool call; absent when
	// none.
	ToolCalls int `json:"tool_calls,omitempty"`
	// OffloadTokens is the part of CachedTokens loaded back from the KV
	// offload tier; absent when none.
	OffloadTokens int `json:"offload_tokens,omitempty"`
	// SpecAccepted holds, for each speculative decoding step of the
	// request, how many draft tokens it accepted (the step's chunk carried
	// that many plus one); absent without speculation.
	SpecAccepted []int `json:"spec_accepted,omitempty"`
	// Preemptions counts the times the request was preempted.
	Preemptions int `json:"preemptions"`
	// FinishReason is "length", "stop", "abort" or "" while running.
	FinishReason string `json:"finish_reason"`
	// N is the request's n when it asked for several choices (absent for
	// one); the record then covers all of them (see the README).
	N int `json:"n,omitempty"`
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

// seqRecord ties a seq to what is known of it outside the engine. For a
// request with n > 1 choices, s is choice 0 and more the others.
type seqRecord struct {
	s        *seq
	more     []*seq
	endpoint string
	wall     time.Time
	received time.Time // when the request reached the socket; zero: not known
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
	td, finish := r.snapshot()
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	out := Truth{
		ID: r.s.id, Endpoint: r.endpoint, Arrival: r.wall.UnixNano(), Fault: r.fault,
		PromptTokens: r.s.promptLen, OutputTokens: len(td.TokenTimes),
		CachedTokens: td.CachedTokens, Preemptions: td.Preemptions, FinishReason: finish,
		QueueMS: ms(td.FirstScheduled), FinishedMS: ms(td.Finished), ChunkTokens: append([]int{}, td.ChunkTokens...),
		TokenMS: []float64{}, ChunkMS: []float64{}, ITLMS: []float64{},
	}
	if len(r.more) > 0 {
		out.N = 1 + len(r.more)
	}
	out.ReasoningTokens, out.ToolCalls = r.answerKinds()
	out.OffloadTokens = td.OffloadTokens
	if len(td.SpecAccepted) > 0 {
		out.SpecAccepted = td.SpecAccepted
	}
	if !r.received.IsZero() {
		intake := ms(max(0, r.wall.Sub(r.received)))
		out.IntakeMS = &intake
	}
	for _, d := range td.TokenTimes {
		out.TokenMS = append(out.TokenMS, ms(d))
	}
	for _, d := range td.ChunkTimes {
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

// answerKinds counts the reasoning tokens generated so far and the
// choices that answer with a tool call.
func (r *seqRecord) answerKinds() (reasoning, toolCalls int) {
	for _, s := range append([]*seq{r.s}, r.more...) {
		s.mu.Lock()
		reasoning += min(s.reasoning, len(s.truth.TokenTimes))
		s.mu.Unlock()
		if s.toolCall {
			toolCalls++
		}
	}
	return reasoning, toolCalls
}

// snapshot copies the record's ground truth and finish reason ("" while
// running). A request with n > 1 choices is their union, since a client
// sees their chunks interleaved in one stream: token and chunk times of all
// choices merged in time order, preemptions and cached tokens summed over
// the choices, the first choice's scheduling and the last one's finish
// (once all have finished), and the finish reason of the choice that
// finished last ("abort" if any was aborted).
func (r *seqRecord) snapshot() (td truthData, finish string) {
	finished := true
	for i, s := range append([]*seq{r.s}, r.more...) {
		s.mu.Lock()
		t := &s.truth
		if i == 0 || t.FirstScheduled > 0 && (td.FirstScheduled == 0 || t.FirstScheduled < td.FirstScheduled) {
			td.FirstScheduled = t.FirstScheduled
		}
		td.TokenTimes = append(td.TokenTimes, t.TokenTimes...)
		td.ChunkTimes = append(td.ChunkTimes, t.ChunkTimes...)
		td.ChunkTokens = append(td.ChunkTokens, t.ChunkTokens...)
		td.Preemptions += t.Preemptions
		td.CachedTokens += t.CachedTokens
		td.OffloadTokens += t.OffloadTokens
		td.SpecAccepted = append(td.SpecAccepted, t.SpecAccepted...)
		switch {
		case !s.finished:
			finished = false
		case finish != "abort" && (s.finish == "abort" || t.Finished >= td.Finished):
			finish = s.finish
		}
		td.Finished = max(td.Finished, t.Finished)
		s.mu.Unlock()
	}
	if !finished {
		td.Finished, finish = 0, ""
	}
	slices.Sort(td.TokenTimes)
	return td.byChunkTime(), finish
}

// byChunkTime orders the chunks (of several choices) by when they were
// written.
func (td truthData) byChunkTime() truthData {
	idx := make([]int, len(td.ChunkTimes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(td.ChunkTimes[a], td.ChunkTimes[b]) })
	times, toks := make([]time.Duration, len(idx)), make([]int, len(idx))
	for i, k := range idx {
		times[i], toks[i] = td.ChunkTimes[k], td.ChunkTokens[k]
	}
	td.ChunkTimes, td.ChunkTokens = times, toks
	return td
}

// Truth returns the ground truth of a recent request by its id: the
// x-request-id it was sent with, or the response id (cmpl-..., chatcmpl-...).
func (s *Server) Truth(id string) (Truth, bool) {
	if t, ok := s.truth.get(id); ok {
		return t, true
	}
	for _, p := range []string{"cmpl-", "chatcmpl-", "embd-", "rerank-", "resp_"} {
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
