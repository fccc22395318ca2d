package client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connServer counts the connections it accepted, and those accepted
// before its first request.
type connServer struct {
	*httptest.Server
	accepted, beforeFirst atomic.Int32
	requests, probes      atomic.Int32
}

func newConnServer(t *testing.T, hold time.Duration) *connServer {
	t.Helper()
	s := &connServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			s.probes.Add(1)
			return
		}
		if s.requests.Add(1) == 1 {
			s.beforeFirst.Store(s.accepted.Load())
		}
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(hold)
		_, _ = w.Write([]byte("ok"))
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.accepted.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func post(t *testing.T, h *http.Client, url string) {
	t.Helper()
	resp, err := h.Post(url, "text/plain", nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// Warmed connections are all open before the first request, and n
// concurrent requests then dial none.
func TestWarmerConnectsBeforeTheRun(t *testing.T) {
	s := newConnServer(t, 50*time.Millisecond)
	h, w := NewWarmHTTPClient(16)
	defer w.Close()
	got, err := w.Warm(context.Background(), s.URL, 16)
	require.NoError(t, err)
	require.Equal(t, 16, got)
	require.Eventually(t, func() bool { return s.accepted.Load() == 16 }, 5*time.Second, 5*time.Millisecond)

	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); post(t, h, s.URL) }()
	}
	wg.Wait()
	assert.Equal(t, int32(16), s.beforeFirst.Load(), "every connection was open before the first request")
	assert.Equal(t, int32(16), s.accepted.Load(), "the requests dialled no connection of their own")
	assert.Equal(t, int32(16), s.probes.Load(), "one GET /health per warm connection")
}

// A warm connection the server closed while it waited is not handed to a
// request (which would fail): a new one is dialled.
func TestWarmerDropsClosedConnections(t *testing.T) {
	s := newConnServer(t, 0)
	h, w := NewWarmHTTPClient(4)
	defer w.Close()
	_, err := w.Warm(context.Background(), s.URL, 4)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.accepted.Load() == 4 }, 5*time.Second, 5*time.Millisecond)
	s.CloseClientConnections() // the server drops its idle connections
	time.Sleep(50 * time.Millisecond)
	post(t, h, s.URL)
	assert.Equal(t, int32(5), s.accepted.Load(), "the request took a fresh connection")
}

func TestWarmerBadURL(t *testing.T) {
	_, w := NewWarmHTTPClient(1)
	_, err := w.Warm(context.Background(), "http://127.0.0.1:1", 2)
	assert.ErrorContains(t, err, "warm connections to 127.0.0.1:1")
}
