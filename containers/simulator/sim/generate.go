package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// genRequest holds the fields of a completion or chat request the simulator
// reads; every other field is accepted and ignored, as vLLM ignores fields
// it does not know.
type genRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatInMessage `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	IgnoreEOS bool   `json:"ignore_eos"`
	Seed      *int64 `json:"seed"`
	N         *int   `json:"n"`
}

type chatInMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// A job is one parsed generation request.
type job struct {
	chat         bool
	rid, id      string
	created      int64
	prompt       []int
	maxTokens    int // output length drawn (at most maxParam)
	maxParam     int // max_tokens, as given or defaulted
	stopAt       string
	stream       bool
	includeUsage bool
	continuous   bool
	fault        fault
	seed         uint64
}

// badRequest is a client error with vLLM's status and message.
type badRequest struct{ e errorResponse }

func (b *badRequest) Error() string { return b.e.Error.Message }

func bad(status int, format string, args ...any) error {
	return &badRequest{newError(status, format, args...)}
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.serveGenerate(w, r, false)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.serveGenerate(w, r, true)
}

func (s *Server) serveGenerate(w http.ResponseWriter, r *http.Request, chat bool) {
	arrival := time.Now()
	j, err := s.parseJob(r, chat)
	if err != nil {
		var b *badRequest
		if errors.As(err, &b) {
			writeError(w, b.e)
			return
		}
		writeError(w, newError(http.StatusBadRequest, "%v", err))
		return
	}
	if j.fault.status != 0 {
		s.truth.add(&seqRecord{s: &seq{id: j.rid, arrival: arrival, promptLen: len(j.prompt)}, endpoint: r.URL.Path, wall: arrival, fault: j.fault.String()})
		writeError(w, newError(j.fault.status, "%s", faultMessage(j.fault.status)))
		return
	}
	sq := &seq{
		id: j.rid, prompt: j.prompt, promptLen: len(j.prompt), maxTokens: j.maxTokens, stopAt: j.stopAt,
		gen: s.vocab.stream(j.seed), arrival: arrival, notify: make(chan struct{}, 1),
	}
	s.truth.add(&seqRecord{s: sq, endpoint: r.URL.Path, wall: arrival, fault: j.fault.String()})
	s.eng.submit(sq)
	defer func() {
		sq.mu.Lock()
		t := sq.truth
		t.TokenTimes = append([]time.Duration(nil), t.TokenTimes...)
		reason := sq.finish
		sq.mu.Unlock()
		s.metrics.finished(&t, sq.promptLen, reason, j.maxParam)
		s.metrics.requestDone(1, len(t.TokenTimes))
	}()
	if j.stream {
		s.stream(w, r, j, sq)
		return
	}
	s.respond(w, r, j, sq)
}

// parseJob reads and validates a request, drawing its output length and
// faults.
func (s *Server) parseJob(r *http.Request, chat bool) (*job, error) {
	var req genRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Model != "" && req.Model != s.p.Model {
		return nil, &badRequest{modelNotFound(req.Model)}
	}
	if req.N != nil && *req.N != 1 {
		return nil, bad(http.StatusBadRequest, "n=%d is not supported by the simulator (only n=1)", *req.N)
	}
	if req.StreamOptions != nil && !req.Stream {
		return nil, bad(http.StatusBadRequest, "Stream options can only be defined when `stream=True`.")
	}
	j := &job{chat: chat, rid: s.requestID(r), created: time.Now().Unix(), stream: req.Stream}
	if req.StreamOptions != nil {
		// As in vLLM, continuous usage stats need include_usage too.
		j.includeUsage = req.StreamOptions.IncludeUsage
		j.continuous = j.includeUsage && req.StreamOptions.ContinuousUsageStats
	}
	if chat {
		j.id = "chatcmpl-" + j.rid
		p, err := s.chatPrompt(req.Messages)
		if err != nil {
			return nil, err
		}
		j.prompt = p
	} else {
		j.id = "cmpl-" + j.rid
		p, err := s.completionPrompt(req.Prompt)
		if err != nil {
			return nil, err
		}
		j.prompt = p
	}
	if err := s.setLength(j, &req); err != nil {
		return nil, err
	}
	f, err := parseFault(r.Header.Get(FaultHeader))
	if err != nil {
		return nil, bad(http.StatusBadRequest, "%v", err)
	}
	j.fault = s.p.drawFault(f, j.rid)
	return j, nil
}

func (s *Server) completionPrompt(raw json.RawMessage) ([]int, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		if text == "" {
			return nil, bad(http.StatusBadRequest, "Either prompt or prompt_embeds must be provided and non-empty.")
		}
		return s.tk.Encode(text, true), nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil && len(ids) > 0 {
		return ids, nil
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err == nil && len(texts) == 1 {
		return s.tk.Encode(texts[0], true), nil
	}
	return nil, bad(http.StatusBadRequest, "prompt must be a non-empty string, a list of token ids, or a list of one string (the simulator serves one prompt per request)")
}

// chatPrompt renders the messages with a Llama-3 style chat template and
// tokenizes the result, ending with the assistant header.
func (s *Server) chatPrompt(msgs []chatInMessage) ([]int, error) {
	if len(msgs) == 0 {
		return nil, bad(http.StatusBadRequest, "messages must not be empty")
	}
	var b strings.Builder
	for i, m := range msgs {
		var text string
		if err := json.Unmarshal(m.Content, &text); err != nil {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				return nil, bad(http.StatusBadRequest, "messages[%d].content must be a string or a list of parts", i)
			}
			for _, p := range parts {
				text += p.Text
			}
		}
		fmt.Fprintf(&b, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", m.Role, text)
	}
	b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	return s.tk.Encode(b.String(), true), nil
}

// setLength checks the context length and draws the output length: exactly
// max_tokens with ignore_eos, else uniform in [eos_min_ratio*max_tokens,
// max_tokens] (a draw short of max_tokens ends with finish_reason "stop").
// Without max_tokens, completions get vLLM's default of 16 and chat gets
// default_max_tokens (vLLM would allow the whole remaining context).
func (s *Server) setLength(j *job, req *genRequest) error {
	n := len(j.prompt)
	maxLen := s.p.MaxModelLen
	want := req.MaxTokens
	if j.chat && req.MaxCompletionTokens != nil {
		want = req.MaxCompletionTokens
	}
	if want != nil && *want < 1 {
		return bad(http.StatusBadRequest, "max_tokens must be at least 1, got %d.", *want)
	}
	var mt int
	switch {
	case !j.chat:
		// vLLM's CompletionRequest defaults max_tokens to 16, as OpenAI
		// does, and checks the prompt against what the output leaves.
		mt = 16
		if want != nil {
			mt = *want
		}
		if n > maxLen-mt {
			return bad(http.StatusBadRequest, "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", maxLen-mt, n)
		}
	case n >= maxLen:
		return bad(http.StatusBadRequest, "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", maxLen, n)
	case want == nil:
		mt = min(s.p.DefaultMaxTokens, maxLen-n)
	default:
		mt = *want
		if n+mt > maxLen {
			return bad(http.StatusBadRequest, "'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d). None", mt, maxLen, n, mt, maxLen, n)
		}
	}
	key := j.rid
	if req.Seed != nil {
		key = fmt.Sprintf("seed/%d", *req.Seed)
	}
	j.seed = seedOf(s.p.Seed, key)
	j.maxTokens, j.maxParam, j.stopAt = mt, mt, "length"
	if !req.IgnoreEOS && s.p.EOSMinRatio < 1 {
		lo := max(1, req.MinTokens, int(float64(mt)*s.p.EOSMinRatio+0.999999))
		if lo < mt {
			rng := rand.New(rand.NewPCG(j.seed, 0xe05))
			if k := lo + rng.IntN(mt-lo+1); k < mt {
				j.maxTokens, j.stopAt = k, "stop"
			}
		}
	}
	return nil
}
