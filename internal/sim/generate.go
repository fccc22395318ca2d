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
	IgnoreEOS   bool     `json:"ignore_eos"`
	Seed        *int64   `json:"seed"`
	N           *int     `json:"n"`
	Temperature *float64 `json:"temperature"`
	// Logprobs is an int for completions, a bool for chat. Both are kept
	// raw so that absent and null can differ (chat's top_logprobs: absent
	// is 0, null is none).
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs json.RawMessage `json:"top_logprobs"`
	// Tools and ToolChoice are chat's function tools (see tools.go).
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// A job is one parsed generation request.
type job struct {
	chat         bool
	rid, id      string
	created      int64
	prompt       []int
	maxTokens    int // the request's output budget
	stream       bool
	includeUsage bool
	continuous   bool
	fault        fault
	// logprobs asks for logprobs with topK alternatives per token
	// (completions' logprobs, chat's top_logprobs).
	logprobs bool
	topK     int
	greedy   bool     // temperature 0: the sampled token is the most likely
	tools    *toolSet // chat's tools, nil for none or tool_choice "none"
	choices  []choice // n of them
}

// A choice is one of a request's n independent sequences.
type choice struct {
	seed      uint64
	maxTokens int    // output length at which it stops
	stopAt    string // its finish reason then: "length" or "stop"
	// reasoning is how many of its first tokens are reasoning (chat).
	reasoning int
	// tool is the tool call it answers with after its reasoning, nil for
	// content. Its engine finish reason is "stop", as in vLLM, whose
	// serving layer reports "tool_calls".
	tool *toolPlan
}

// rich reports whether the choice streams more than plain content.
func (c *choice) rich() bool { return c.reasoning > 0 || c.tool != nil }

// badRequest is a client error with vLLM's status and message.
type badRequest struct{ e errorResponse }

func (b *badRequest) Error() string { return b.e.Error.Message }

func bad(status int, format string, args ...any) error {
	return &badRequest{newError(status, format, args...)}
}

// writeErr answers a request that could not be served: with the status
// and message of a *badRequest, else 400 with the error's text.
func writeErr(w http.ResponseWriter, err error) {
	if b, ok := errors.AsType[*badRequest](err); ok {
		writeError(w, b.e)
		return
	}
	writeError(w, newError(http.StatusBadRequest, "%v", err))
}

// checkModel refuses a request for a model the server does not serve
// (none named means the served one).
func (s *Server) checkModel(model string) error {
	if model != "" && model != s.p.Model {
		return &badRequest{modelNotFound(model)}
	}
	return nil
}

// requestFault reads a request's fault header and adds the configured random
// faults, drawn for request id rid.
func (s *Server) requestFault(r *http.Request, rid string) (fault, error) {
	f, err := parseFault(r.Header.Get(FaultHeader))
	if err != nil {
		return f, bad(http.StatusBadRequest, "%v", err)
	}
	return s.p.drawFault(f, rid), nil
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
		writeErr(w, err)
		return
	}
	if s.refuseFault(w, r, j, arrival) {
		return
	}
	kids := s.submitJob(j, r, arrival)
	defer s.recordFinished(j, kids)
	if j.stream {
		s.stream(w, r, j, kids)
		return
	}
	s.respond(w, r, j, kids)
}

// submitJob hands the engine one sequence per choice, all at once, so that
// they are admitted in the same step and the later ones find the prompt's
// blocks in the prefix cache, as vLLM's n child requests do. One ground
// truth record covers them all.
// refuseFault answers a job whose injected fault is an HTTP status with
// that error, records it in the ground truth, and reports whether it did.
func (s *Server) refuseFault(w http.ResponseWriter, r *http.Request, j *job, arrival time.Time) bool {
	if j.fault.status == 0 {
		return false
	}
	s.truth.add(&seqRecord{s: &seq{id: j.rid, arrival: arrival, promptLen: len(j.prompt)}, endpoint: r.URL.Path, wall: arrival, received: receivedAt(r), fault: j.fault.String()})
	writeError(w, newError(j.fault.status, "%s", faultMessage(j.fault.status)))
	return true
}

// frontend waits the modelled time a request spends in a real server's
// front end before it reaches the engine's queue: its turn at the
// serial part (frontend_serial_ms, one request at a time, first come
// first served), then frontend_ms. A client that goes away meanwhile is
// seen by the handler's next wait, which aborts the sequence as usual.
func (s *Server) frontend(r *http.Request) {
	if s.p.FrontendMS <= 0 && s.p.FrontendSerialMS <= 0 {
		return
	}
	now := time.Now()
	s.frontMu.Lock()
	reach := frontReach(now, &s.frontFree, s.p)
	s.frontMu.Unlock()
	sleepCtx(r, reach.Sub(now))
}

// frontReach is when a request that enters the front end at t reaches
// the engine, given when the front end's serial part is next free
// (*free, advanced past this request): the same rule on either clock.
func frontReach(t time.Time, free *time.Time, p Params) time.Time {
	start := t
	if free.After(start) {
		start = *free
	}
	*free = start.Add(msDuration(p.FrontendSerialMS))
	return free.Add(msDuration(p.FrontendMS))
}

// msDuration is ms milliseconds.
func msDuration(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond))
}

func (s *Server) submitJob(j *job, r *http.Request, arrival time.Time) []*seq {
	notify := make(chan struct{}, 1) // shared: the handler waits for any choice
	kids := make([]*seq, len(j.choices))
	for i, c := range j.choices {
		kids[i] = &seq{
			id: j.rid, prompt: j.prompt, promptLen: len(j.prompt), maxTokens: c.maxTokens, stopAt: c.stopAt,
			gen: s.vocab.stream(c.seed), arrival: arrival, notify: notify,
		}
		kids[i].reasoning = c.reasoning
		if c.tool != nil {
			kids[i].gen.script, kids[i].gen.at = c.tool.script, c.reasoning
			kids[i].toolCall = true
		}
	}
	s.truth.add(&seqRecord{s: kids[0], more: kids[1:], endpoint: r.URL.Path, wall: arrival, received: receivedAt(r), fault: j.fault.String()})
	s.frontend(r)
	s.eng.submit(kids...)
	return kids
}

// recordFinished counts each choice as a finished request in /metrics, as
// vLLM's engine counts each of a request's n children, and the request
// once for its n and the most tokens a choice generated, as vLLM records
// the parent when its last child ends.
func (s *Server) recordFinished(j *job, kids []*seq) {
	most := 0
	for _, sq := range kids {
		sq.mu.Lock()
		t := sq.truth
		t.TokenTimes = append([]time.Duration(nil), t.TokenTimes...)
		reason := sq.finish
		sq.mu.Unlock()
		s.metrics.finished(&t, sq.promptLen, reason, j.maxTokens)
		most = max(most, len(t.TokenTimes))
	}
	s.metrics.requestDone(len(kids), most)
}

// parseJob reads and validates a request, drawing its output length and
// faults.
func (s *Server) parseJob(r *http.Request, chat bool) (*job, error) {
	var req genRequest
	if err := decodeBody(r, &req, s.genBodyLimit()); err != nil {
		return nil, err
	}
	if err := s.checkModel(req.Model); err != nil {
		return nil, err
	}
	if req.StreamOptions != nil && !req.Stream {
		return nil, invalid("Stream options can only be defined when `stream=True`.")
	}
	logprobs, topK, err := parseLogprobs(&req, chat)
	if err != nil {
		return nil, err
	}
	j := &job{chat: chat, rid: s.requestID(r), created: time.Now().Unix(), stream: req.Stream, logprobs: logprobs, topK: topK}
	if req.StreamOptions != nil {
		// As in vLLM, continuous usage stats need include_usage too.
		j.includeUsage = req.StreamOptions.IncludeUsage
		j.continuous = j.includeUsage && req.StreamOptions.ContinuousUsageStats
	}
	if chat {
		j.id = "chatcmpl-" + j.rid
		p, err := s.chatPrompt(req.Messages, req.Tools)
		if err != nil {
			return nil, err
		}
		j.prompt = p
		if j.tools, err = parseToolChoice(req.Tools, req.ToolChoice); err != nil {
			return nil, err
		}
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
	if err := s.setSampling(j, &req); err != nil {
		return nil, err
	}
	if j.fault, err = s.requestFault(r, j.rid); err != nil {
		return nil, err
	}
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

// setLength checks the context length and sets the output budget. Without
// max_tokens, completions get vLLM's default of 16 and chat gets
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
	j.maxTokens = mt
	return nil
}

// setSampling checks n, temperature and the number of logprobs as vLLM
// does (its SamplingParams, then its input processor), and draws each
// choice's seed and output length: exactly max_tokens with ignore_eos,
// else uniform in [eos_min_ratio*max_tokens, max_tokens] (a draw short of
// max_tokens ends with finish_reason "stop"). Choice i of a request with a
// seed gets seed+i, as vLLM's child requests do.
func (s *Server) setSampling(j *job, req *genRequest) error {
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if n < 1 {
		return bad(http.StatusBadRequest, "n must be at least 1, got %d.", n)
	}
	if n > maxN {
		return bad(http.StatusBadRequest, "n must be at most %d, got %d.", maxN, n)
	}
	temp := 1.0 // vLLM's default without a generation config
	if req.Temperature != nil {
		temp = *req.Temperature
	}
	if temp < 0 {
		return bad(http.StatusBadRequest, "temperature must be non-negative, got %s.", pyFloat(temp).append(nil))
	}
	if j.greedy = temp < 1e-5; j.greedy && n > 1 {
		return bad(http.StatusBadRequest, "n must be 1 when using greedy sampling, got %d.", n)
	}
	if j.logprobs && j.topK != 0 {
		k := j.topK
		if k == -1 {
			k = s.tk.VocabSize()
		}
		if k > maxLogprobs {
			return bad(http.StatusBadRequest, "Requested sample logprobs of %d, which is greater than max allowed: %d", k, maxLogprobs)
		}
		j.topK = k
	}
	j.choices = make([]choice, n)
	for i := range j.choices {
		key := j.rid
		if i > 0 {
			key = fmt.Sprintf("%s/%d", j.rid, i)
		}
		if req.Seed != nil {
			key = fmt.Sprintf("seed/%d", *req.Seed+int64(i))
		}
		c := &j.choices[i]
		c.seed = seedOf(s.p.Seed, key)
		c.maxTokens, c.stopAt = j.maxTokens, "length"
		if !req.IgnoreEOS {
			if k := s.p.eosLength(c.seed, j.maxTokens, req.MinTokens); k < j.maxTokens {
				c.maxTokens, c.stopAt = k, "stop"
			}
		}
		if !j.chat {
			continue
		}
		c.reasoning = s.p.reasoningTokens(c.maxTokens)
		if c.tool = s.drawTool(j.tools, c.seed, j.maxTokens); c.tool != nil {
			c.maxTokens, c.stopAt = c.reasoning+len(c.tool.script), "stop"
			if c.maxTokens > j.maxTokens {
				c.maxTokens, c.stopAt = j.maxTokens, "length"
			}
		}
	}
	return nil
}

// eosLength is the output length of a choice with seed that does not
// ignore EOS: uniform in [eos_min_ratio*maxTokens, maxTokens] (at least
// minTokens and 1), maxTokens when eos_min_ratio is 1.
func (p Params) eosLength(seed uint64, maxTokens, minTokens int) int {
	if p.EOSMinRatio >= 1 {
		return maxTokens
	}
	lo := max(1, minTokens, int(float64(maxTokens)*p.EOSMinRatio+0.999999))
	if lo >= maxTokens {
		return maxTokens
	}
	rng := rand.New(rand.NewPCG(seed, 0xe05))
	return lo + rng.IntN(maxTokens-lo+1)
}

// parseLogprobs reads and checks the logprobs fields as vLLM's request
// models do. Completions: logprobs k (k >= 0) asks for the sampled token's
// logprob and the top k per token. Chat: logprobs true asks for them with
// top_logprobs k alternatives (default 0; null means no logprobs at all,
// as in vLLM; -1 means the whole vocabulary, refused later).
func parseLogprobs(req *genRequest, chat bool) (want bool, k int, err error) {
	null := func(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }
	if !chat {
		if null(req.Logprobs) {
			return false, 0, nil
		}
		k, ok := laxInt(req.Logprobs)
		if !ok {
			return false, 0, invalid("logprobs: Input should be a valid integer")
		}
		if k < 0 {
			return false, 0, invalid("`logprobs` must be a positive value.")
		}
		return true, k, nil
	}
	if !null(req.Logprobs) {
		b, ok := laxBool(req.Logprobs)
		if !ok {
			return false, 0, invalid("logprobs: Input should be a valid boolean")
		}
		want = b
	}
	if len(req.TopLogprobs) == 0 {
		return want, 0, nil // the default, 0
	}
	if null(req.TopLogprobs) {
		return false, 0, nil
	}
	k, ok := laxInt(req.TopLogprobs)
	if !ok {
		return false, 0, invalid("top_logprobs: Input should be a valid integer")
	}
	if k < 0 && k != -1 {
		return false, 0, invalid("`top_logprobs` must be a positive value or -1.")
	}
	if (k == -1 || k > 0) && !want {
		return false, 0, invalid("when using `top_logprobs`, `logprobs` must be set to true.")
	}
	return want, k, nil
}

// laxInt reads an int as pydantic's lax mode does: an integer, a float
// with no fraction, or a bool.
func laxInt(raw json.RawMessage) (int, bool) {
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		if f != float64(int(f)) {
			return 0, false
		}
		return int(f), true
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		if b {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// laxBool reads a bool as pydantic's lax mode does: a bool, 0 or 1, or a
// string such as "true".
func laxBool(raw json.RawMessage) (bool, bool) {
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		return b, true
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil && (f == 0 || f == 1) {
		return f == 1, true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch strings.ToLower(s) {
		case "true", "1", "yes", "on", "t", "y":
			return true, true
		case "false", "0", "no", "off", "f", "n":
			return false, true
		}
	}
	return false, false
}
