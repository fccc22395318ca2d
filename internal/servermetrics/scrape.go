package servermetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// DefaultInterval is the scrape interval when Options.Interval is 0.
const DefaultInterval = time.Second

// Limits that keep a misbehaving server from exhausting memory or time.
const (
	// maxBody is the largest exposition read (vLLM's is about 60 KB).
	maxBody = 16 << 20
	// maxTimeout bounds one scrape.
	maxTimeout = 5 * time.Second
	// maxSnapshots bounds the series of one run: a scrape a second for
	// three hours. Later scrapes replace the last one, so the end of the
	// run is never lost.
	maxSnapshots = 3 * 3600
)

// ErrNoEndpoint is the cause of a failed scrape when the server has no
// metrics endpoint (404 or 405).
var ErrNoEndpoint = errors.New("no metrics endpoint")

// A Scraper reads one server's metrics endpoint.
type Scraper struct {
	// URL is the endpoint, such as http://127.0.0.1:8000/metrics.
	URL string
	// HTTP sends the scrapes; nil uses a client of its own, so that the
	// scrapes never take a connection of the benchmark's pool.
	HTTP *http.Client
	// Headers are sent with every scrape (an API key, for example).
	Headers map[string]string
}

var defaultHTTP = &http.Client{Transport: &http.Transport{MaxIdleConns: 2, IdleConnTimeout: time.Minute}}

// Scrape reads the endpoint once and returns the families servegate
// reads. The answer is parsed with expfmt according to its Content-Type
// (the Prometheus text format when it names none).
func (s *Scraper) Scrape(ctx context.Context) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, maxTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return Snapshot{}, fmt.Errorf("scrape %s: %w", s.URL, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	h := s.HTTP
	if h == nil {
		h = defaultHTTP
	}
	resp, err := h.Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("scrape %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		return Snapshot{}, fmt.Errorf("scrape %s: %w (HTTP %d)", s.URL, ErrNoEndpoint, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("scrape %s: HTTP %s", s.URL, resp.Status)
	}
	fams, err := Parse(resp.Header, resp.Body)
	if err != nil {
		return Snapshot{}, fmt.Errorf("scrape %s: %w", s.URL, err)
	}
	return newSnapshot(time.Now(), fams), nil
}

// Parse reads an exposition of the format the header names (text when it
// names none expfmt knows), at most 16 MiB of it.
func Parse(h http.Header, body io.Reader) (map[string]*dto.MetricFamily, error) {
	format := expfmt.ResponseFormat(h)
	if format.FormatType() == expfmt.TypeUnknown {
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	lr := &io.LimitedReader{R: body, N: maxBody + 1}
	dec := expfmt.NewDecoder(lr, format)
	fams := map[string]*dto.MetricFamily{}
	for {
		f := &dto.MetricFamily{}
		err := dec.Decode(f)
		if errors.Is(err, io.EOF) {
			break
		}
		if lr.N <= 0 {
			return nil, fmt.Errorf("metrics exposition larger than %d bytes", maxBody)
		}
		if err != nil {
			return nil, fmt.Errorf("parse metrics: %w", err)
		}
		if old, ok := fams[f.GetName()]; ok {
			old.Metric = append(old.Metric, f.Metric...)
			continue
		}
		fams[f.GetName()] = f
	}
	if lr.N <= 0 {
		return nil, fmt.Errorf("metrics exposition larger than %d bytes", maxBody)
	}
	return fams, nil
}

// Options say whether and how often a run scrapes.
type Options struct {
	// Interval is the time between scrapes during the run; 0 means
	// DefaultInterval.
	Interval time.Duration
	// Off disables scraping.
	Off bool
	// Path is the endpoint's path; empty means /metrics.
	Path string
}

// A Recorder scrapes a server before a run, at its start, every interval
// during it and at its end. Its methods are safe for concurrent use.
// Failed scrapes are counted and the first error kept; a run never fails
// because of them.
type Recorder struct {
	scraper  Scraper
	interval time.Duration

	mu     sync.Mutex
	before *Snapshot
	series []Snapshot
	failed int
	err    error
	stop   context.CancelFunc
	done   chan struct{}
}

// NewRecorder returns a recorder of the server at baseURL.
func NewRecorder(baseURL string, opts Options, headers map[string]string) *Recorder {
	path := opts.Path
	if path == "" {
		path = "/metrics"
	}
	iv := opts.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	return &Recorder{
		scraper:  Scraper{URL: strings.TrimRight(baseURL, "/") + path, Headers: headers},
		interval: iv,
	}
}

// Interval is the time between scrapes.
func (r *Recorder) Interval() time.Duration { return r.interval }

// Before scrapes once before anything of the run is sent, for the
// contamination check. A server without the endpoint answers at once, so
// Start does not try again.
func (r *Recorder) Before(ctx context.Context) {
	s, err := r.scraper.Scrape(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.fail(err)
		return
	}
	r.before = &s
}

// Start scrapes once (the run's baseline) and then every interval in the
// background until Stop. It does nothing when the endpoint is missing.
func (r *Recorder) Start(ctx context.Context) {
	if r.missing() {
		return
	}
	r.scrapeOnce(ctx)
	ctx, cancel := context.WithCancel(ctx)
	r.stop, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.scrapeOnce(ctx)
			}
		}
	}()
}

// The last scrape of a run repeats, settlePause apart, for at most
// settleTimeout (see Stop).
const (
	settleTimeout = time.Second
	settlePause   = 50 * time.Millisecond
)

// Stop ends the periodic scrapes and scrapes a last time. A server may
// count a request after its last byte went out (vLLM records its stats
// after it hands the outputs to the request streams), so the last scrape
// is taken again until the counters hold still between two scrapes and
// no request is running or waiting, for at most settleTimeout; the
// settled scrape replaces the one before it. A server that others keep
// busy never settles and costs the full second.
func (r *Recorder) Stop(ctx context.Context) {
	if r.stop != nil {
		r.stop()
		<-r.done
	}
	if r.missing() {
		return
	}
	r.scrapeOnce(ctx)
	deadline := time.Now().Add(settleTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		prev, ok := r.last()
		if !ok {
			return
		}
		time.Sleep(settlePause)
		s, err := r.scraper.Scrape(ctx)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.series[len(r.series)-1] = s
		r.mu.Unlock()
		if settled(prev, s) {
			return
		}
	}
}

// last returns the newest scrape of the run.
func (r *Recorder) last() (Snapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.series) == 0 {
		return Snapshot{}, false
	}
	return r.series[len(r.series)-1], true
}

// settled reports whether b, scraped after a, shows an idle server whose
// counters did not move.
func settled(a, b Snapshot) bool {
	for _, c := range counters {
		if a.Values[c] != b.Values[c] {
			return false
		}
	}
	return b.Values[RequestsRunning] == 0 && b.Values[RequestsWaiting] == 0
}

func (r *Recorder) missing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Is(r.err, ErrNoEndpoint)
}

func (r *Recorder) scrapeOnce(ctx context.Context) {
	s, err := r.scraper.Scrape(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			r.fail(err)
		}
		return
	}
	if len(r.series) == maxSnapshots {
		r.series[len(r.series)-1] = s
		return
	}
	r.series = append(r.series, s)
}

func (r *Recorder) fail(err error) {
	r.failed++
	if r.err == nil {
		r.err = err
	}
}

// Series returns the snapshot taken before the run (nil when it failed),
// the run's snapshots in order, the number of failed scrapes and the first
// error.
func (r *Recorder) Series() (before *Snapshot, series []Snapshot, failed int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.before, r.series, r.failed, r.err
}
