package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/metrics"
)

// streamServer answers completions and chat requests with a recorded vLLM
// stream and counts requests in flight.
type streamServer struct {
	*httptest.Server
	body        map[string][]byte
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	hold        time.Duration
	// acceptedAt are the times connections were accepted.
	acceptedAt []time.Time

	mu       sync.Mutex
	models   []string
	ids      []string
	paths    []string
	statuses []int // answers to give first, in order (then 200)
}

func newStreamServer(tb testing.TB) *streamServer {
	tb.Helper()
	s := &streamServer{body: map[string][]byte{}}
	for path, name := range map[string]string{
		"/v1/completions":      "vllm-0.13-completions.sse",
		"/v1/chat/completions": "vllm-0.13-chat.sse",
	} {
		b, err := os.ReadFile(filepath.Join(fixtures.Dir(), "fixtures", "sse", name))
		if err != nil {
			tb.Fatal(err)
		}
		s.body[path] = b
	}
	s.body["/v1/embeddings"] = []byte(`{"object":"list","data":[{"index":0,"object":"embedding","embedding":[0.5,-0.5]}],"usage":{"prompt_tokens":5,"total_tokens":5}}`)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.acceptedAt = append(s.acceptedAt, time.Now())
			s.mu.Unlock()
		}
	}
	s.Start()
	tb.Cleanup(s.Close)
	return s
}

func (s *streamServer) serve(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	var p struct {
		Model string `json:"model"`
	}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &p)
	s.mu.Lock()
	s.models = append(s.models, p.Model)
	s.ids = append(s.ids, r.Header.Get("x-request-id"))
	s.paths = append(s.paths, r.URL.Path)
	status := http.StatusOK
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	s.mu.Unlock()
	if status != http.StatusOK {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"status %d on purpose","type":"BadRequestError","code":%d}}`, status, status)
		return
	}
	body, ok := s.body[r.URL.Path]
	if !ok {
		w.WriteHeader(http.StatusOK) // profiler endpoints
		return
	}
	if s.hold > 0 {
		select {
		case <-time.After(s.hold):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = w.Write(body)
}

func samples(n int) []dataset.Sample {
	out := make([]dataset.Sample, n)
	for i := range out {
		out[i] = dataset.Sample{Prompt: fmt.Sprintf("prompt %d", i), PromptLen: 10 + i, OutputLen: 8}
	}
	return out
}

func TestRunRecordsEverySample(t *testing.T) {
	srv := newStreamServer(t)
	var progress atomic.Int64
	res, err := Run(t.Context(), Config{
		BaseURL:         srv.URL,
		Backend:         "openai-chat",
		Model:           "m",
		RequestRate:     500,
		MaxConcurrency:  3,
		RequestIDPrefix: "t-",
		Progress:        func(done, total int) { progress.Store(int64(done)) },
	}, samples(40))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 40 || progress.Load() != 40 {
		t.Fatalf("%d records, progress %d", len(res.Records), progress.Load())
	}
	for i, r := range res.Records {
		if !r.Success {
			t.Fatalf("record %d failed: %s", i, r.Error)
		}
		if r.RequestID != fmt.Sprintf("t-%d", i) || r.PromptLen != 10+i || r.OutputTokens != 8 {
			t.Errorf("record %d: id %q prompt %d tokens %d", i, r.RequestID, r.PromptLen, r.OutputTokens)
		}
		if r.Dispatched < r.Scheduled || r.Start < r.Dispatched {
			t.Errorf("record %d: scheduled %v dispatched %v start %v out of order", i, r.Scheduled, r.Dispatched, r.Start)
		}
		if i > 0 && r.Scheduled < res.Records[i-1].Scheduled {
			t.Errorf("schedule not monotonic at %d", i)
		}
		if end := r.Start + r.Latency; end > res.Duration {
			t.Errorf("record %d ends at %v after the run's duration %v", i, end, res.Duration)
		}
	}
	if m := srv.maxInFlight.Load(); m > 3 {
		t.Errorf("max in flight %d > MaxConcurrency 3", m)
	}
	if got := res.Records[39].Scheduled; got != 80*time.Millisecond {
		t.Errorf("last request scheduled at %v, want N/rate = 80ms", got)
	}
	s := metrics.Summarize(res.Records, res.Duration, metrics.Options{})
	if s.Completed != 40 || s.TotalOutput != 320 {
		t.Errorf("summary completed %d output %d", s.Completed, s.TotalOutput)
	}
	if _, ok := s.Value("p99_ttft_ms"); !ok {
		t.Error("no p99_ttft_ms")
	}
	if !strings.HasPrefix(srv.paths[0], "/v1/chat/completions") {
		t.Errorf("path %q", srv.paths[0])
	}
}

func TestLoRAAndModelName(t *testing.T) {
	srv := newStreamServer(t)
	cfg := Config{BaseURL: srv.URL + "/", Model: "base", ModelName: "served", LoRAModules: []string{"lora-a", "lora-b"}, Seed: 3}
	if _, err := Run(t.Context(), cfg, samples(30)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	srv.mu.Lock()
	first := slices.Clone(srv.models)
	for _, m := range srv.models {
		seen[m]++
	}
	srv.models = nil
	srv.mu.Unlock()
	if len(seen) != 2 || seen["lora-a"] == 0 || seen["lora-b"] == 0 {
		t.Errorf("models sent %v, want both LoRA modules only", seen)
	}
	// The choice is seeded: the same seed picks the same modules.
	if _, err := Run(t.Context(), cfg, samples(30)); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	second := slices.Clone(srv.models)
	srv.mu.Unlock()
	slices.Sort(first)
	slices.Sort(second)
	if !slices.Equal(first, second) {
		t.Error("same seed chose different LoRA modules")
	}
	cfg.LoRAModules = nil
	srv.mu.Lock()
	srv.models = nil
	srv.mu.Unlock()
	if _, err := Run(t.Context(), cfg, samples(2)); err != nil {
		t.Fatal(err)
	}
	if srv.models[0] != "served" {
		t.Errorf("model sent %q, want the served name", srv.models[0])
	}
}

func TestRequestTimeoutRecords(t *testing.T) {
	srv := newStreamServer(t)
	srv.hold = time.Minute
	res, err := Run(t.Context(), Config{BaseURL: srv.URL, Model: "m", RequestTimeout: 50 * time.Millisecond}, samples(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if r.Success || r.Failure != metrics.FailureTimeout || r.Unsent {
			t.Errorf("record %+v", r)
		}
	}
	if res.Stopped != nil {
		t.Errorf("stopped %v", res.Stopped)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Model: "m"}, "no base URL"},
		{Config{BaseURL: "http://x"}, "no model"},
		{Config{BaseURL: "http://x", Model: "m", Backend: "tgi"}, "unknown backend"},
		{Config{BaseURL: "http://x", Model: "m", Backend: "openai-chat", Endpoint: "/v1/completions"}, "must end with"},
		{Config{BaseURL: "http://x", Model: "m", MaxConcurrency: -1}, "negative"},
		{Config{BaseURL: "http://x", Model: "m", RequestRate: -3}, "request rate"},
		{Config{BaseURL: "http://x", Model: "m", TraceArrivals: true, TraceSpeed: -1}, "trace speed"},
		{Config{BaseURL: "http://x", Model: "m", TraceArrivals: true, RampUp: &RampUp{Strategy: "linear", StartRPS: 1, EndRPS: 2}}, "choose one"},
		// Credentials in the URL are masked in the message.
		{Config{BaseURL: "ftp://u:planted-pw@x", Model: "m"}, `base URL "ftp://xxxxx@x"`},
		{Config{BaseURL: "http://u:planted-pw@x", Model: "m", Backend: "openai-chat", Endpoint: "/v1/completions"}, `"http://xxxxx@x/v1/completions" must end`},
	}
	for _, tt := range tests {
		_, err := Run(t.Context(), tt.cfg, samples(1))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := Run(t.Context(), Config{BaseURL: "http://x", Model: "m"}, nil); err == nil {
		t.Error("no samples accepted")
	}
}

func TestEmbeddingsRun(t *testing.T) {
	srv := newStreamServer(t)
	res, err := Run(t.Context(), Config{BaseURL: srv.URL, Backend: "openai-embeddings", Model: "bge", MaxConcurrency: 2}, samples(6))
	if err != nil {
		t.Fatal(err)
	}
	s := metrics.Summarize(res.Records, res.Duration, metrics.Options{Pooling: true})
	if s.Completed != 6 || s.TotalInput != 30 {
		t.Errorf("completed %d input %d, want 6 and the server's 6×5", s.Completed, s.TotalInput)
	}
	if v, ok := s.Value("p99_e2el_ms"); !ok || v <= 0 {
		t.Errorf("p99 e2el %v %v", v, ok)
	}
	if srv.paths[0] != "/v1/embeddings" {
		t.Errorf("path %s", srv.paths[0])
	}
}

// TestPoolingSamplesReachTheServer checks that the documents and batched
// inputs a dataset puts in a sample are what the server receives.
func TestPoolingSamplesReachTheServer(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		_ = json.NewDecoder(r.Body).Decode(&p)
		mu.Lock()
		bodies = append(bodies, p)
		mu.Unlock()
		if strings.Contains(r.URL.Path, "rerank") {
			w.Write([]byte(`{"results":[{"index":0,"relevance_score":0.5}],"usage":{"total_tokens":7}}`))
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"index":0,"object":"embedding","embedding":[0.5]}],"usage":{"prompt_tokens":4,"total_tokens":4}}`))
	}))
	defer srv.Close()

	rerank := []dataset.Sample{{Prompt: "query", PromptLen: 1, Documents: []string{"doc a", "doc b"}, RequestID: "r0"}}
	_, err := Run(t.Context(), Config{BaseURL: srv.URL, Backend: "vllm-rerank", Endpoint: "/v1/rerank", Model: "m",
		RerankDocuments: []string{"fallback"}}, rerank)
	if err != nil {
		t.Fatal(err)
	}
	embed := []dataset.Sample{{Prompt: "x", PromptLen: 2, Inputs: []string{"one", "two"}, RequestID: "e0"}}
	_, err = Run(t.Context(), Config{BaseURL: srv.URL, Backend: "openai-embeddings", Model: "m"}, embed)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	if got := fmt.Sprint(bodies[0]["documents"]); got != "[doc a doc b]" {
		t.Errorf("rerank documents %s, want the sample's", got)
	}
	if got := fmt.Sprint(bodies[1]["input"]); got != "[one two]" {
		t.Errorf("embeddings input %s, want the sample's batch", got)
	}
}

// With warm connections, every connection the run needs is open before
// its first request; without, the requests open their own (vLLM's way).
func TestRunWarmConnections(t *testing.T) {
	for _, tc := range []struct {
		warm, conc int
		want       int32
	}{{WarmAuto, 4, 4}, {WarmAuto, 0, 12}, {3, 0, 3}, {0, 4, 0}} {
		srv := newStreamServer(t)
		srv.hold = 20 * time.Millisecond
		res, err := Run(context.Background(), Config{BaseURL: srv.URL, Model: "m", MaxConcurrency: tc.conc,
			WarmConnections: tc.warm}, samples(12))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if !r.Success {
				t.Fatalf("request failed: %s", r.Error)
			}
		}
		var before int32
		srv.mu.Lock()
		for _, at := range srv.acceptedAt {
			if at.Before(res.Start) {
				before++
			}
		}
		srv.mu.Unlock()
		if before != tc.want {
			t.Errorf("warm=%d concurrency=%d: %d connections open before time zero, want %d", tc.warm, tc.conc, before, tc.want)
		}
	}
	_, err := Run(context.Background(), Config{BaseURL: "http://x", Model: "m", WarmConnections: 5000}, samples(1))
	if err == nil || !strings.Contains(err.Error(), "warm connections: 5000 is out of range") {
		t.Errorf("WarmConnections 5000: got %v", err)
	}
}
