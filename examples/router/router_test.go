package main

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	cfg, err := loadConfig(env(map[string]string{"SERVEGATE_BACKENDS": "http://sim-0:8000, http://sim-1:8000,"}))
	require.NoError(t, err)
	assert.Equal(t, Config{Port: "8080", Policy: PolicyLeast, Backends: []string{"http://sim-0:8000", "http://sim-1:8000"}}, cfg)

	cfg, err = loadConfig(env(map[string]string{"SERVEGATE_BACKENDS": "http://a", "ROUTER_EXTRA_DELAY": "20ms", "ROUTER_POLICY": "round-robin", "ROUTER_PORT": "9000"}))
	require.NoError(t, err)
	assert.Equal(t, 20*time.Millisecond, cfg.ExtraDelay)
	assert.Equal(t, PolicyRoundRobin, cfg.Policy)
	assert.Equal(t, "9000", cfg.Port)

	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "SERVEGATE_BACKENDS is empty"},
		{map[string]string{"SERVEGATE_BACKENDS": "http://a", "ROUTER_POLICY": "random"}, `ROUTER_POLICY="random"`},
		{map[string]string{"SERVEGATE_BACKENDS": "http://a", "ROUTER_EXTRA_DELAY": "20"}, `ROUTER_EXTRA_DELAY="20"`},
		{map[string]string{"SERVEGATE_BACKENDS": "http://a", "ROUTER_EXTRA_DELAY": "-1s"}, `ROUTER_EXTRA_DELAY="-1s"`},
	} {
		_, err := loadConfig(env(tc.env))
		assert.ErrorContains(t, err, tc.want)
	}
	_, err = newRouter(Config{Backends: []string{"sim-0:8000"}})
	assert.ErrorContains(t, err, `"sim-0:8000" is not an http(s) base URL`)
}

func TestPick(t *testing.T) {
	r, err := newRouter(Config{Policy: PolicyLeast, Backends: []string{"http://a", "http://b", "http://c"}})
	require.NoError(t, err)
	r.backends[0].inFlight.Store(3)
	r.backends[1].inFlight.Store(1)
	r.backends[2].inFlight.Store(2)
	for range 5 {
		assert.Equal(t, "b", r.pick().url.Host, "the fewest in flight")
	}
	r.backends[1].inFlight.Store(2)
	seen := map[string]int{}
	for range 4 {
		seen[r.pick().url.Host]++
	}
	assert.Equal(t, map[string]int{"b": 2, "c": 2}, seen, "ties take turns")

	rr, err := newRouter(Config{Policy: PolicyRoundRobin, Backends: []string{"http://a", "http://b"}})
	require.NoError(t, err)
	rr.backends[1].inFlight.Store(100)
	var order []string
	for range 4 {
		order = append(order, rr.pick().url.Host)
	}
	assert.Equal(t, []string{"a", "b", "a", "b"}, order)
}

// TestStreamsAndDelays proxies a server-sent event stream: the first event
// reaches the client while the backend still holds the second, and the
// extra delay is asked for once per proxied request, not for /health.
func TestStreamsAndDelays(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: first %s\n\n", r.Header.Get("X-Request-Id"))
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	r, err := newRouter(Config{Policy: PolicyLeast, Backends: []string{up.URL}, ExtraDelay: 20 * time.Millisecond})
	require.NoError(t, err)
	var waits []time.Duration
	r.wait = func(_ *http.Request, d time.Duration) bool { waits = append(waits, d); return true }
	front := httptest.NewServer(r)
	defer front.Close()

	resp, err := http.Get(front.URL + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, waits)

	req, err := http.NewRequest(http.MethodPost, front.URL+"/v1/completions", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("X-Request-Id", "r-1")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	require.True(t, sc.Scan())
	assert.Equal(t, "data: first r-1", sc.Text(), "the first event arrives before the backend finishes")
	assert.Equal(t, int64(1), r.backends[0].inFlight.Load())
	close(release)
	var rest []string
	for sc.Scan() {
		if sc.Text() != "" {
			rest = append(rest, sc.Text())
		}
	}
	assert.Equal(t, []string{"data: [DONE]"}, rest)
	assert.Equal(t, []time.Duration{20 * time.Millisecond}, waits)
}

func TestBackendDown(t *testing.T) {
	r, err := newRouter(Config{Policy: PolicyLeast, Backends: []string{"http://127.0.0.1:1"}})
	require.NoError(t, err)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
	assert.Equal(t, http.StatusBadGateway, w.Code)
	assert.Contains(t, w.Body.String(), "router: backend http://127.0.0.1:1")
}
