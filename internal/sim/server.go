// Package sim is servegate's vLLM-compatible simulator: an HTTP server with
// vLLM v0.13's OpenAI wire format in front of a continuous-batching model
// that runs in real time (a step loop with max_num_seqs, a token budget with
// chunked prefill, a paged KV cache with preemption and prefix caching), with
// faults on demand and the ground truth of every request's emit times.
//
// Use New for an in-process server (an http.Handler, for httptest) and Main
// for the command line. The testcontainers module in the parent package
// (containers/simulator) runs the same server in a FROM-scratch image.
package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Version is the vLLM version the simulator answers on /version.
const Version = "0.13.0"

// A Config says which server New builds. The zero value is the default
// profile with the word tokenizer.
type Config struct {
	// Profile is a shipped profile's name (see Profiles) or a YAML file's
	// path. Empty means DefaultParams.
	Profile string
	// Params, when set, is used instead of Profile.
	Params *Params
	// Set overrides knobs by YAML key after the profile, like flags do:
	// {"max_num_seqs": "4"}.
	Set map[string]string
	// Slowdown, when > 0, overrides the profile's slowdown factor (1.10 =
	// every step 10% slower).
	Slowdown float64
	// Tokenizer counts prompt tokens and spells the output. Nil means a
	// built-in word tokenizer whose counts only approximate a real one's.
	Tokenizer Tokenizer
	// TruthLimit is how many recent requests keep their ground truth
	// (a few kB each). Default 10000.
	TruthLimit int
}

// A Server is a running simulator. It is an http.Handler; Close stops its
// engine.
type Server struct {
	p       Params
	eng     *engine
	metrics *metrics
	tk      Tokenizer
	vocab   *vocab
	truth   *truthStore
	started time.Time
	mux     *http.ServeMux
	cancel  context.CancelFunc
	done    chan struct{}
	nextID  atomic.Uint64
	// frontMu guards frontFree, when the front end's serial part
	// (frontend_serial_ms) is next free.
	frontMu   sync.Mutex
	frontFree time.Time
}

// Resolve returns the Params a Config describes: profile, then Set, then
// Slowdown, validated.
func (c Config) Resolve() (Params, error) {
	var p Params
	if c.Params != nil {
		p = *c.Params
	} else {
		var err error
		if p, err = LoadProfile(c.Profile); err != nil {
			return p, err
		}
	}
	for k, v := range c.Set {
		if err := p.Set(k, v); err != nil {
			return p, fmt.Errorf("simulator config: %w", err)
		}
	}
	if c.Slowdown > 0 {
		p.Slowdown = c.Slowdown
	}
	return p, p.Validate()
}

// New builds a simulator and starts its engine.
func New(cfg Config) (*Server, error) {
	p, err := cfg.Resolve()
	if err != nil {
		return nil, fmt.Errorf("new simulator: %w", err)
	}
	tk := cfg.Tokenizer
	if tk == nil {
		tk = wordTokenizer{}
	}
	v := newVocab(tk)
	if len(v.ids) == 0 {
		return nil, fmt.Errorf("new simulator: the tokenizer has no token that is a plain lowercase word")
	}
	limit := cfg.TruthLimit
	if limit <= 0 {
		limit = 10000
	}
	m := newMetrics(p)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		p: p, metrics: m, tk: tk, vocab: v,
		eng:     newEngine(p, m),
		truth:   newTruthStore(limit),
		started: time.Now(),
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	s.routes()
	go func() {
		defer close(s.done)
		s.eng.run(ctx)
	}()
	return s, nil
}

// Params returns the knobs the server runs with.
func (s *Server) Params() Params { return s.p }

// Close stops the engine; requests in flight end without [DONE].
func (s *Server) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// ServeHTTP serves the simulator's endpoints. During the startup delay
// every endpoint but /metrics, /version and /debug/ answers 503, like a
// server still loading its model.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.p.EnableRequestIDHeaders {
		id := r.Header.Get("X-Request-Id")
		if id == "" {
			id = s.uuidHex()
		}
		w.Header().Set("X-Request-Id", id)
	}
	w, done := s.metrics.instrument(w, r)
	defer done() // also when a fault aborts the handler with a panic
	if s.starting() && r.URL.Path != "/metrics" && r.URL.Path != "/version" && !strings.HasPrefix(r.URL.Path, "/debug/") {
		writeError(w, newError(http.StatusServiceUnavailable, "The server is starting up."))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// starting reports whether the startup delay is still running.
func (s *Server) starting() bool {
	return time.Since(s.started) < time.Duration(s.p.StartupDelayMS*float64(time.Millisecond))
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/completions", s.handleCompletions)
	m.HandleFunc("POST /v1/chat/completions", s.handleChat)
	m.HandleFunc("POST /v1/responses", s.handleResponses)
	m.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	m.HandleFunc("POST /rerank", s.handleRerank)
	m.HandleFunc("POST /v1/rerank", s.handleRerank)
	m.HandleFunc("POST /v2/rerank", s.handleRerank)
	m.HandleFunc("GET /v1/models", s.handleModels)
	m.HandleFunc("GET /health", s.handleHealth)
	m.HandleFunc("GET /ping", s.handleHealth)
	m.HandleFunc("POST /ping", s.handleHealth)
	m.HandleFunc("GET /version", s.handleVersion)
	m.HandleFunc("GET /metrics", s.handleMetrics)
	m.HandleFunc("GET /debug/requests/{id}", s.handleTruth)
	m.HandleFunc("GET /debug/steps", s.handleSteps)
	m.HandleFunc("POST /reset_prefix_cache", s.handleResetPrefixCache)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if cw, ok := w.(*countingWriter); ok {
			cw.unrouted = true // counted under the handler "none"
		}
		writeError(w, newError(http.StatusNotFound, "Not Found: %s %s", r.Method, r.URL.Path))
	})
	s.mux = m
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}

// handleResetPrefixCache empties the prefix cache, as vLLM's dev-mode
// route does; reset_external=true empties the offload tier too. vLLM
// answers 200 even when blocks in use made it refuse; the simulator
// answers 409 then, so that a caller can tell.
func (s *Server) handleResetPrefixCache(w http.ResponseWriter, r *http.Request) {
	external, _ := strconv.ParseBool(r.URL.Query().Get("reset_external"))
	ok, err := s.eng.resetPrefixCache(r.Context(), external)
	switch {
	case err != nil:
		writeError(w, newError(http.StatusServiceUnavailable, "reset prefix cache: %v", err))
	case !ok:
		writeError(w, newError(http.StatusConflict, "Failed to reset prefix cache: running requests hold KV blocks."))
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": Version})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	// One buffered body with a Content-Length, as prometheus_client sends it.
	var b bytes.Buffer
	s.metrics.write(&b, s.eng.snapshot())
	w.Header().Set("Content-Type", "text/plain; version=1.0.0; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.Write(b.Bytes())
}

// modelCard is one entry of /v1/models, as vLLM lists it.
type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen int               `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	now := time.Now().Unix()
	perm := modelPermission{ID: fmt.Sprintf("modelperm-%016x", seedOf(s.p.Seed, s.p.Model)), Object: "model_permission",
		Created: now, AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*"}
	card := modelCard{ID: s.p.Model, Object: "model", Created: now, OwnedBy: "vllm", Root: s.p.Model,
		MaxModelLen: s.p.MaxModelLen, Permission: []modelPermission{perm}}
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelCard{card}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(marshal(v))
}

// marshal is compact JSON without HTML escaping, as Python's json and
// pydantic write it.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"error":{"message":"simulator: cannot encode response","type":"InternalServerError","param":null,"code":500}}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func writeError(w http.ResponseWriter, e errorResponse) {
	if e == plain500 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, e.Error.Message)
		return
	}
	writeJSON(w, e.Error.Code, e)
}

// requestID returns the request's x-request-id, or makes one of 16 hex
// digits, as vLLM makes them.
func (s *Server) requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" {
		return id
	}
	return fmt.Sprintf("%016x", s.nextRandom())
}

// uuidHex is 32 hex digits, like Python's uuid.uuid4().hex, which vLLM's
// request-id middleware answers with when a request has no X-Request-Id.
func (s *Server) uuidHex() string {
	return fmt.Sprintf("%016x%016x", s.nextRandom(), s.nextRandom())
}

// nextRandom mixes a counter under the seed, so ids are unique and
// reproducible.
func (s *Server) nextRandom() uint64 {
	x := seedOf(s.p.Seed, "id") + s.nextID.Add(1)*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
