package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Policies.
const (
	PolicyLeast      = "least"
	PolicyRoundRobin = "round-robin"
)

// A Config is the router's settings, read from the environment.
type Config struct {
	// Port is the listen port. Default 8080.
	Port string
	// Backends are the base URLs requests go to.
	Backends []string
	// Policy picks a backend: least (default) or round-robin.
	Policy string
	// ExtraDelay is added before forwarding every request.
	ExtraDelay time.Duration
}

// loadConfig reads ROUTER_PORT, ROUTER_POLICY, ROUTER_EXTRA_DELAY and
// SERVEGATE_BACKENDS; a bad value is an error naming the variable.
func loadConfig(getenv func(string) string) (Config, error) {
	cfg := Config{Port: "8080", Policy: PolicyLeast}
	if p := getenv("ROUTER_PORT"); p != "" {
		cfg.Port = p
	}
	switch p := getenv("ROUTER_POLICY"); p {
	case "":
	case PolicyLeast, PolicyRoundRobin:
		cfg.Policy = p
	default:
		return cfg, fmt.Errorf("ROUTER_POLICY=%q: want %s or %s", p, PolicyLeast, PolicyRoundRobin)
	}
	if d := getenv("ROUTER_EXTRA_DELAY"); d != "" {
		v, err := time.ParseDuration(d)
		if err != nil || v < 0 {
			return cfg, fmt.Errorf("ROUTER_EXTRA_DELAY=%q: want a duration >= 0 such as 20ms", d)
		}
		cfg.ExtraDelay = v
	}
	for _, b := range strings.Split(getenv("SERVEGATE_BACKENDS"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.Backends = append(cfg.Backends, b)
		}
	}
	if len(cfg.Backends) == 0 {
		return cfg, errors.New("SERVEGATE_BACKENDS is empty: give the backends' base URLs, comma-separated")
	}
	return cfg, nil
}

// transport is the router's connection pool. Go's default keeps 2 idle
// connections a host: a burst of streamed requests would then dial anew
// each time, and the dials would show up in every time to first token.
var transport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return t
}()

// A backend is one upstream server and its requests in flight.
type backend struct {
	url      *url.URL
	proxy    *httputil.ReverseProxy
	inFlight atomic.Int64
}

// A Router proxies each request to one backend.
type Router struct {
	cfg      Config
	backends []*backend
	mu       sync.Mutex
	next     int // round-robin position, and the tie-break start for least
	// wait sleeps d unless the request ends first; tests record it.
	wait func(req *http.Request, d time.Duration) bool
}

func newRouter(cfg Config) (*Router, error) {
	r := &Router{cfg: cfg, wait: sleep}
	for _, raw := range cfg.Backends {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("SERVEGATE_BACKENDS: %q is not an http(s) base URL", raw)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = transport
		p.FlushInterval = -1 // stream server-sent events token by token
		p.ErrorHandler = func(w http.ResponseWriter, req *http.Request, err error) {
			http.Error(w, fmt.Sprintf("router: backend %s: %v", u, err), http.StatusBadGateway)
		}
		r.backends = append(r.backends, &backend{url: u, proxy: p})
	}
	return r, nil
}

// pick chooses the backend for one request.
func (r *Router) pick() *backend {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.backends)
	start := r.next
	r.next = (r.next + 1) % n
	if r.cfg.Policy == PolicyRoundRobin {
		return r.backends[start]
	}
	best := r.backends[start]
	for i := 1; i < n; i++ {
		b := r.backends[(start+i)%n]
		if b.inFlight.Load() < best.inFlight.Load() {
			best = b
		}
	}
	return best
}

// ServeHTTP answers /health itself and proxies everything else.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/health" {
		w.WriteHeader(http.StatusOK)
		return
	}
	if d := r.cfg.ExtraDelay; d > 0 && !r.wait(req, d) {
		return
	}
	if err := bufferBody(req); err != nil {
		http.Error(w, "router: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	b := r.pick()
	b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	b.proxy.ServeHTTP(w, req)
}

// sleep waits d, or less when the request ends first (then false).
func sleep(req *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-req.Context().Done():
		return false
	}
}

// maxBody bounds a request body the router holds in memory.
const maxBody = 32 << 20

// bufferBody reads the request body into memory before it is proxied. A
// streamed answer flushes its headers while the upstream request may still
// be reading the inbound body, and an HTTP/1 server may close a request body
// once the answer's headers are out: the proxy then breaks the upstream
// connection mid-answer and the client sees an unexpected EOF.
func bufferBody(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	req.Body.Close()
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	if len(data) > maxBody {
		return fmt.Errorf("request body over %d bytes", maxBody)
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.ContentLength = int64(len(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return nil
}
