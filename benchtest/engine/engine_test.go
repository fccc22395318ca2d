package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servegate/servegate/benchtest/dataset"
	"github.com/servegate/servegate/benchtest/metrics"
	"github.com/servegate/servegate/fixtures"
)

// streamServer answers completions and chat requests with a recorded vLLM
// stream and counts requests in flight.
type streamServer struct {
	*httptest.Server
	body        map[string][]byte
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	hold        time.Duration

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
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
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
		if r.RequestID != fmt.Sprintf("t-%d", i) || r.PromptLen != 10+i || r.OutputTokens != 10 {
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
	if s.Completed != 40 || s.TotalOutput != 400 {
		t.Errorf("summary completed %d output %d", s.Completed, s.TotalOutput)
	}
	if _, ok := s.Value("p99_ttft_ms"); !ok {
		t.Error("no p99_ttft_ms")
	}
	if !strings.HasPrefix(srv.paths[0], "/v1/chat/completions") {
		t.Errorf("path %q", srv.paths[0])
	}
}
