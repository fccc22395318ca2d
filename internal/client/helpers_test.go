package client

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/metrics"
)

// readFixture returns a recorded stream from fixtures/sse.
func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(), "fixtures", "sse", name))
	if err != nil {
		tb.Fatalf("read fixture: %v", err)
	}
	return b
}

// A replay is an httptest server that answers every request with a fixed
// status and body, written in pieces of split bytes (0: all at once), each
// flushed, with gap between pieces. It keeps the last request it saw.
type replay struct {
	*httptest.Server
	mu      sync.Mutex
	body    []byte
	status  int
	split   int
	gap     time.Duration
	lastReq *http.Request
	payload map[string]any
}

func newReplay(tb testing.TB, status int, body []byte, split int) *replay {
	tb.Helper()
	r := &replay{body: body, status: status, split: split}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	tb.Cleanup(r.Close)
	return r
}

func (r *replay) serve(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	var p map[string]any
	_ = json.Unmarshal(raw, &p)
	r.mu.Lock()
	r.lastReq, r.payload = req, p
	r.mu.Unlock()
	if r.status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(r.status)
	f := w.(http.Flusher)
	body := r.body
	n := r.split
	if n <= 0 {
		n = len(body)
	}
	for len(body) > 0 {
		k := min(n, len(body))
		if _, err := w.Write(body[:k]); err != nil {
			return
		}
		f.Flush()
		body = body[k:]
		if r.gap > 0 && len(body) > 0 {
			time.Sleep(r.gap)
		}
	}
}

func (r *replay) seen() (*http.Request, map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastReq, r.payload
}

// newClient returns a client of backend for the server at base.
func newClient(backend, base string) *Client {
	path := "/v1/completions"
	switch backend {
	case BackendOpenAIChat:
		path = "/v1/chat/completions"
	case BackendOpenAIEmbeddings:
		path = "/v1/embeddings"
	case BackendVLLMRerank:
		path = "/v1/rerank"
	case BackendOpenAIResponses:
		path = "/v1/responses"
	}
	return &Client{Backend: backend, URL: base + path, Model: "meta-llama/Llama-3.2-1B-Instruct"}
}

// checkTimings asserts the invariants every successful record keeps: TTFT
// positive and latency equal to TTFT plus the gaps (they are differences of
// the same clock readings, so the sum is exact).
func checkTimings(tb testing.TB, rec metrics.Record) {
	tb.Helper()
	if rec.TTFT <= 0 {
		tb.Errorf("TTFT = %v, want > 0", rec.TTFT)
	}
	sum := rec.TTFT
	for _, g := range rec.ITL {
		if g < 0 {
			tb.Errorf("negative ITL %v", g)
		}
		sum += g
	}
	if rec.Latency != sum {
		tb.Errorf("latency %v != TTFT + sum(ITL) %v", rec.Latency, sum)
	}
}

// replaceAll is bytes.ReplaceAll for strings.
func replaceAll(b []byte, old, new string) []byte {
	return bytes.ReplaceAll(b, []byte(old), []byte(new))
}
