package engine

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/metrics"
)

// fakeServer is a handler for synctest bubbles: it answers a chat request
// after service (fake) time with a recorded vLLM stream, and records the
// paths and models it saw.
type fakeServer struct {
	service  time.Duration
	body     []byte
	mu       sync.Mutex
	paths    []string
	statuses []int
	// profileStatus, when set, answers the profiler endpoints.
	profileStatus int
}

func newFakeServer(tb testing.TB, service time.Duration) *fakeServer {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(), "fixtures", "sse", "vllm-0.13-chat.sse"))
	if err != nil {
		tb.Fatal(err)
	}
	return &fakeServer{service: service, body: b}
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path)
	status := http.StatusOK
	if len(f.statuses) > 0 && strings.HasSuffix(r.URL.Path, "completions") {
		status, f.statuses = f.statuses[0], f.statuses[1:]
	}
	f.mu.Unlock()
	if status != http.StatusOK {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"model \"x\" does not exist","type":"NotFoundError","code":404}}`)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "completions") {
		if f.profileStatus != 0 {
			w.WriteHeader(f.profileStatus)
		}
		return
	}
	select {
	case <-time.After(f.service):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = w.Write(f.body)
}

func (f *fakeServer) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

// inBubble runs fn in a synctest bubble with a fake server behind an
// in-memory network and the dispatcher's spin disabled (fake time does
// not pass while a goroutine spins).
func inBubble(t *testing.T, service time.Duration, fn func(t *testing.T, srv *fakeServer, cfg Config)) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(t, service)
		net := newPipeNet(srv)
		defer net.shutdown(t)
		cfg := Config{
			BaseURL:    "http://pipe",
			Backend:    "openai-chat",
			Model:      "m",
			HTTPClient: net.client,
			SpinWindow: -1,
		}
		fn(t, srv, cfg)
	})
}

const ms = time.Millisecond

func TestOpenLoopSendsAtScheduledTimes(t *testing.T) {
	inBubble(t, 250*ms, func(t *testing.T, _ *fakeServer, cfg Config) {
		cfg.RequestRate = 10
		cfg.Burstiness = math.Inf(1)
		res, err := Run(t.Context(), cfg, samples(10))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res.Records {
			want := time.Duration(i+1) * 100 * ms
			if !r.Success || r.Scheduled != want || r.Dispatched != want || r.Start != want {
				t.Errorf("request %d: success %v scheduled %v dispatched %v start %v, want all %v", i, r.Success, r.Scheduled, r.Dispatched, r.Start, want)
			}
			if r.TTFT != 250*ms || r.Latency != 250*ms {
				t.Errorf("request %d: TTFT %v latency %v, want 250ms", i, r.TTFT, r.Latency)
			}
		}
		if res.Duration != 1250*ms {
			t.Errorf("duration %v, want 1.25s", res.Duration)
		}
	})
}

func TestConcurrencyLimitQueuesWithoutDelayingDispatch(t *testing.T) {
	inBubble(t, 250*ms, func(t *testing.T, _ *fakeServer, cfg Config) {
		cfg.RequestRate = 10
		cfg.Burstiness = math.Inf(1)
		cfg.MaxConcurrency = 1
		res, err := Run(t.Context(), cfg, samples(6))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res.Records {
			sched := time.Duration(i+1) * 100 * ms
			start := 100*ms + time.Duration(i)*250*ms
			if r.Scheduled != sched || r.Dispatched != sched || r.Start != start {
				t.Errorf("request %d: scheduled %v dispatched %v start %v, want %v %v %v", i, r.Scheduled, r.Dispatched, r.Start, sched, sched, start)
			}
		}
		for i, r := range res.Records {
			// Each request was free to go when the one before it ended.
			if r.Free != r.Start {
				t.Errorf("request %d: free %v, start %v: waiting for a slot counted as lateness", i, r.Free, r.Start)
			}
		}
		s := metrics.Summarize(res.Records, res.Duration, metrics.Options{})
		if v, _ := s.Value("p99_lateness_ms"); v != 0 {
			t.Errorf("p99 lateness %v ms, want 0", v)
		}
		if v, _ := s.Value("p99_schedule_lag_ms"); v < 700 {
			t.Errorf("p99 schedule lag %v ms, want the slot waits (750)", v)
		}
		if !res.Health.Measured || res.Health.CPUs < 1 {
			t.Errorf("health not measured: %+v", res.Health)
		}
		// Queue times are 0, 150, 300, 450, 600, 750 ms.
		if v, _ := s.Value("mean_queue_ms"); math.Abs(v-375) > 1e-9 {
			t.Errorf("mean queue %v ms, want 375", v)
		}
		if v, _ := s.Value("max_concurrent_requests"); v != 1 {
			// One at a time; buckets may still see two requests touch the same second.
			t.Logf("max concurrent requests in a 1-second bucket: %v", v)
		}
	})
}

func TestRampUpEvents(t *testing.T) {
	inBubble(t, 10*ms, func(t *testing.T, _ *fakeServer, cfg Config) {
		cfg.RampUp = &RampUp{Strategy: "linear", StartRPS: 1, EndRPS: 4}
		res, err := Run(t.Context(), cfg, samples(8))
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, e := range res.RPSChanges {
			got = append(got, e.RPS)
			if _, err := time.Parse("2006-01-02T15:04:05.999999", e.Timestamp); err != nil {
				t.Errorf("timestamp %q: %v", e.Timestamp, err)
			}
		}
		if want := []int{1, 2, 3, 4}; !slices.Equal(got, want) {
			t.Errorf("rps events %v, want %v", got, want)
		}
		for i, r := range res.Schedule.Rates {
			if want := 1 + 3*float64(i)/7; math.Abs(r-want) > 1e-12 {
				t.Errorf("rate %d = %v, want %v", i, r, want)
			}
		}
		for i, r := range res.Records {
			if !r.Success || r.Start != r.Scheduled {
				t.Errorf("request %d: success %v start %v scheduled %v", i, r.Success, r.Start, r.Scheduled)
			}
		}
	})
}

func TestTraceReplay(t *testing.T) {
	inBubble(t, 10*ms, func(t *testing.T, _ *fakeServer, cfg Config) {
		cfg.TraceArrivals = true
		cfg.TraceSpeed = 2
		ss := samples(4)
		for i, at := range []time.Duration{0, 50 * ms, 50 * ms, 300 * ms} {
			ss[i].Arrival, ss[i].HasArrival = at, true
		}
		res, err := Run(t.Context(), cfg, ss)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []time.Duration{0, 25 * ms, 25 * ms, 150 * ms} {
			if r := res.Records[i]; r.Scheduled != want || r.Start != want || !r.Success {
				t.Errorf("request %d: scheduled %v start %v, want %v", i, r.Scheduled, r.Start, want)
			}
		}
	})
}

func TestMaxDurationKeepsRecords(t *testing.T) {
	inBubble(t, 10*time.Second, func(t *testing.T, _ *fakeServer, cfg Config) {
		cfg.MaxConcurrency = 3
		cfg.MaxDuration = time.Second
		res, err := Run(t.Context(), cfg, samples(10))
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res.Stopped, ErrMaxDuration) {
			t.Errorf("stopped = %v, want ErrMaxDuration", res.Stopped)
		}
		if len(res.Records) != 10 {
			t.Fatalf("%d records", len(res.Records))
		}
		var canceled, unsent int
		for _, r := range res.Records {
			switch {
			case r.Unsent:
				unsent++
			case r.Failure == metrics.FailureCanceled:
				canceled++
			}
			if r.Success || r.Failure != metrics.FailureCanceled || r.RequestID == "" {
				t.Errorf("record %+v", r)
			}
		}
		if canceled != 3 || unsent != 7 {
			t.Errorf("canceled %d unsent %d, want 3 and 7", canceled, unsent)
		}
		if res.Duration != time.Second {
			t.Errorf("duration %v, want 1s", res.Duration)
		}
		s := metrics.Summarize(res.Records, res.Duration, metrics.Options{})
		if v, _ := s.Value("failed_canceled"); v != 3 {
			t.Errorf("failed_canceled %v, want 3 (unsent left out)", v)
		}
	})
}

func TestCancelMidRun(t *testing.T) {
	inBubble(t, 10*time.Second, func(t *testing.T, _ *fakeServer, cfg Config) {
		cfg.RequestRate = 2
		cfg.Burstiness = math.Inf(1)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(1200*ms, cancel)
		res, err := Run(ctx, cfg, samples(6))
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res.Stopped, context.Canceled) {
			t.Errorf("stopped %v", res.Stopped)
		}
		sent := 0
		for _, r := range res.Records {
			if !r.Unsent {
				sent++
			}
		}
		if sent != 2 { // at 0.5 s and 1 s
			t.Errorf("%d sent before the cancel at 1.2s, want 2", sent)
		}
	})
}

func TestReadiness(t *testing.T) {
	t.Run("retries until ready", func(t *testing.T) {
		inBubble(t, 0, func(t *testing.T, srv *fakeServer, cfg Config) {
			srv.statuses = []int{503, 500}
			cfg.ReadyTimeout = time.Minute
			start := time.Now()
			res, err := Run(t.Context(), cfg, samples(1))
			if err != nil {
				t.Fatal(err)
			}
			if res.Start.Sub(start) != 10*time.Second {
				t.Errorf("run started after %v, want two 5s retry intervals", res.Start.Sub(start))
			}
			if n := len(srv.seen()); n != 4 {
				t.Errorf("%d requests, want 3 probes and 1 sample", n)
			}
		})
	})
	t.Run("4xx stops at once", func(t *testing.T) {
		inBubble(t, 0, func(t *testing.T, srv *fakeServer, cfg Config) {
			srv.statuses = []int{404}
			cfg.ReadyTimeout = 10 * time.Minute
			start := time.Now()
			_, err := Run(t.Context(), cfg, samples(1))
			if err == nil || !strings.Contains(err.Error(), `model "x" does not exist`) {
				t.Fatalf("err = %v, want the server's message", err)
			}
			if time.Since(start) != 0 {
				t.Errorf("waited %v", time.Since(start))
			}
		})
	})
	t.Run("times out", func(t *testing.T) {
		inBubble(t, 0, func(t *testing.T, srv *fakeServer, cfg Config) {
			srv.statuses = make([]int, 100)
			for i := range srv.statuses {
				srv.statuses[i] = 503
			}
			cfg.ReadyTimeout = 12 * time.Second
			start := time.Now()
			_, err := Run(t.Context(), cfg, samples(1))
			if err == nil || !strings.Contains(err.Error(), "not ready after 12s") || !strings.Contains(err.Error(), "503") {
				t.Fatalf("err = %v", err)
			}
			if time.Since(start) != 12*time.Second {
				t.Errorf("gave up after %v", time.Since(start))
			}
		})
	})
}

func TestWarmupsAndProfile(t *testing.T) {
	inBubble(t, 5*ms, func(t *testing.T, srv *fakeServer, cfg Config) {
		cfg.NumWarmups = 3
		cfg.Profile = true
		res, err := Run(t.Context(), cfg, samples(2))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Warmups) != 3 || len(res.Warnings) != 0 {
			t.Errorf("warm-ups %d warnings %v", len(res.Warmups), res.Warnings)
		}
		got := srv.seen()
		want := []string{"/v1/chat/completions", "/v1/chat/completions", "/v1/chat/completions", "/start_profile", "/v1/chat/completions", "/v1/chat/completions", "/stop_profile"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("paths\n got %v\nwant %v", got, want)
		}
	})
}

func TestProfileFailureIsAWarning(t *testing.T) {
	inBubble(t, 5*ms, func(t *testing.T, srv *fakeServer, cfg Config) {
		srv.profileStatus = http.StatusInternalServerError
		cfg.Profile = true
		res, err := Run(t.Context(), cfg, samples(2))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0].Error(), "/start_profile answered 500") {
			t.Errorf("warnings %v, want both profiler calls", res.Warnings)
		}
		for _, r := range res.Records {
			if !r.Success {
				t.Errorf("a profiler failure failed a request: %s", r.Error)
			}
		}
	})
}
