// Package engine drives a benchmark run the way vllm bench serve does:
// a readiness probe, warm-up requests, an open-loop arrival schedule
// (Poisson, gamma, constant, ramp-up or a replayed trace) dispatched at
// absolute times, an optional limit on requests in flight, and one
// metrics.Record per sample.
package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/shard"
	"github.com/servegate/servegate/internal/tokenizer"
)

// WarmAuto as Config.WarmConnections warms one connection per request that
// can be in flight at once.
const WarmAuto = -1

// ErrMaxDuration is the cause a run stops with when Config.MaxDuration
// runs out.
var ErrMaxDuration = errors.New("maximum duration reached")

// Limits on a Config's numbers, far above any real run: Run rejects a
// value past them, naming it, before sending anything.
const (
	// MaxWarmups is the most warm-up requests (NumWarmups).
	MaxWarmups = 10_000
	// MaxConcurrencyLimit is the largest MaxConcurrency.
	MaxConcurrencyLimit = 100_000
	// MaxTimeout is the longest ReadyTimeout, ReadyInterval,
	// RequestTimeout and MaxDuration.
	MaxTimeout = 7 * 24 * time.Hour
)

// A Config describes one benchmark run. The zero value of every field but
// BaseURL and Model works.
type Config struct {
	// BaseURL is the server's base URL ("http://127.0.0.1:8000").
	BaseURL string
	// Endpoint is the API path; empty picks the backend's usual one
	// (/v1/completions, /v1/chat/completions, /v1/embeddings, /v1/rerank).
	Endpoint string
	// Backend is openai (default), vllm, openai-chat, openai-embeddings or
	// vllm-rerank.
	Backend string
	// Model is the model id; ModelName, when set, is the name sent in
	// requests (the served model name).
	Model, ModelName string
	// Tokenizer counts output tokens when the server sends no usage.
	Tokenizer *tokenizer.Tokenizer
	// RequestRate is the mean request rate in req/s; 0 or +Inf sends
	// every request at once.
	RequestRate float64
	// Burstiness is the gamma shape of the gaps; 0 means 1 (Poisson),
	// +Inf constant gaps.
	Burstiness float64
	// RampUp, when set, replaces RequestRate by a rising rate.
	RampUp *RampUp
	// MaxConcurrency limits the requests in flight; 0 means no limit.
	MaxConcurrency int
	// NumWarmups is the number of warm-up requests (the first sample)
	// sent before the run and not recorded in it.
	NumWarmups int
	// ReadyTimeout is how long to wait for the server to answer the first
	// sample successfully (retrying every ReadyInterval); 0 skips the
	// check. A 4xx answer stops the wait at once.
	ReadyTimeout time.Duration
	// ReadyInterval is the pause between readiness probes; 0 means 5 s.
	ReadyInterval time.Duration
	// RequestTimeout bounds each request; 0 means none.
	RequestTimeout time.Duration
	// MaxDuration stops the run after this long (in-flight requests end
	// as canceled, unsent ones are marked Unsent); 0 means no limit.
	MaxDuration time.Duration
	// Seed seeds the arrival process and the LoRA choice.
	Seed int64
	// IgnoreEOS sends ignore_eos: true.
	IgnoreEOS bool
	// Logprobs is sent as logprobs by the completions backends.
	Logprobs *int
	// Sampling holds temperature, top_p, top_k, min_p and penalties.
	Sampling client.Sampling
	// ExtraBody is merged into every payload last.
	ExtraBody map[string]any
	// Headers are sent with every request.
	Headers map[string]string
	// LoRAModules, when set, are chosen at random per request and sent
	// as the model. The choice is seeded by Seed; like the arrival times
	// it follows vLLM's distribution (uniform), not Python's random
	// stream.
	LoRAModules []string
	// RequestIDPrefix prefixes the index of samples that carry no
	// RequestID; empty means "bench-<8 hex digits>-" as vLLM does.
	RequestIDPrefix string
	// RerankDocuments are the documents sent with a rerank query whose sample
	// carries none (dataset random-rerank fills Sample.Documents).
	RerankDocuments []string
	// Profile calls /start_profile before the run and /stop_profile after.
	Profile bool
	// TraceArrivals replays each Sample.Arrival instead of the synthetic
	// process, sped up by TraceSpeed (0 means 1).
	TraceArrivals bool
	TraceSpeed    float64
	// Progress, when set, is called after each request with the number
	// done and the total; calls are serialized.
	Progress func(done, total int)
	// Started, when set, is called once the readiness check and the
	// warm-ups are done, just before the run's time zero (servegate scrapes
	// the server's metrics baseline there).
	Started func()
	// HTTPClient, when set, sends the requests through net/http; nil lets
	// the client choose: its own HTTP/1.1 transport for an http:// URL
	// with no proxy, net/http otherwise, either sized for the run.
	HTTPClient *http.Client
	// WarmConnections dials this many connections after the warm-up and
	// before time zero, so that TTFT does not include connection set-up
	// (client.Warmer). WarmAuto dials one per request that can be in
	// flight at once (MaxConcurrency, else every request); 0 (vLLM's
	// behaviour) dials none. At most client.MaxWarmConnections. Needs
	// HTTPClient nil.
	WarmConnections int
	// MaxLineBytes caps one SSE line or event the server sends; past it
	// the request fails as line_too_long. 0 means 1 MiB; at most
	// client.MaxLineBytesLimit (1 GiB).
	MaxLineBytes int
	// Shard, when set, sends only this shard's part of the schedule: the
	// requests shard.Spec.OwnsIndex gives it, at the full schedule's
	// times, so that N processes with the same seed and samples send the
	// full run between them, each request once. The records are this
	// shard's only; warm-ups and the readiness check are per process, and
	// MaxConcurrency limits each process.
	Shard shard.Spec
	// StartAt, when set, is the wall-clock moment the schedule starts: the
	// run waits for it after the readiness check and the warm-ups, so that
	// every shard starts together. A shard that gets there late starts at
	// once; Result.Start records when it did.
	StartAt time.Time
	// SpinWindow is how long before each send time the dispatcher stops
	// sleeping on a Go timer (up to about a millisecond late) and waits
	// precisely: a thread sleep, then polling the clock for the last 100
	// µs, which costs some CPU at high rates. 0 means 1.5 ms; a negative
	// value uses the Go timer alone.
	SpinWindow time.Duration
}

// A Result is what a run produced.
type Result struct {
	// Records holds one record per sample, in sample order.
	Records []metrics.Record
	// Duration is the benchmark duration as vLLM measures it: from just
	// before the first request is scheduled to the end of the last one.
	Duration time.Duration
	// Start is the wall-clock time of the run's time zero.
	Start time.Time
	// Schedule is the arrival schedule used (nil for trace replay): the
	// full one under Config.Shard.
	Schedule *Schedule
	// Indices are the positions in the full schedule (and the samples) of
	// Records: 0..n-1, or this shard's under Config.Shard.
	Indices []int
	// RPSChanges are the ramp-up's RPS change events (vLLM's
	// rps_change_events); nil without ramp-up.
	RPSChanges []metrics.RPSChange
	// Warmups holds the warm-up requests' records.
	Warmups []metrics.Record
	// Stopped is why the run ended early (context cancellation or
	// ErrMaxDuration); nil when every request ran.
	Stopped error
	// Warnings are non-fatal problems, such as a failed profiler call.
	Warnings []error
	// Health is how the load generator's process fared during the run
	// (CPU, GC pauses, scheduling delays), measured from the first
	// scheduled request to the end of the last one.
	Health metrics.Health
}

// Run runs the benchmark described by cfg over samples. It returns an error
// only for a bad configuration or a server that never became ready; a
// canceled run returns its records so far with Result.Stopped set.
func Run(ctx context.Context, cfg Config, samples []dataset.Sample) (*Result, error) {
	if len(samples) == 0 {
		return nil, errors.New("run: no samples")
	}
	if err := cfg.normalize(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	offsets, sched, err := Arrivals(cfg, samples)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if cfg.Shard.Count > len(samples) {
		return nil, fmt.Errorf("run: shard %s: %d shards for %d requests leaves some with none to send", cfg.Shard, cfg.Shard.Count, len(samples))
	}
	indices := cfg.Shard.Indices(len(samples))
	c, warmer := cfg.client()
	if cfg.HTTPClient == nil {
		defer c.CloseIdleConnections() // the run's own connections; a caller's client keeps its own
	}
	if warmer != nil {
		defer warmer.Close()
	}
	profiler := cfg.HTTPClient // /start_profile and /stop_profile go by net/http
	if profiler == nil && cfg.Profile {
		profiler = client.NewHTTPClient(1)
	}
	first := cfg.request(samples[0], 0, "")
	first.RequestID = ""
	if cfg.ReadyTimeout > 0 {
		if err := waitReady(ctx, c, first, cfg.ReadyTimeout, cfg.ReadyInterval); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	res := &Result{Schedule: sched, Indices: indices}
	res.Warmups = warmUp(ctx, c, first, cfg.NumWarmups, cfg.MaxConcurrency)
	if cfg.Profile {
		if err := profile(ctx, profiler, cfg.BaseURL+"/start_profile"); err != nil {
			res.Warnings = append(res.Warnings, err)
		}
	}
	if err := cfg.warm(ctx, warmer, len(indices)); err != nil {
		res.Warnings = append(res.Warnings, err)
	}
	if cfg.Started != nil {
		cfg.Started()
	}
	lora := cfg.loraChoices(len(samples))
	reqs := make([]client.Request, len(indices))
	mine := make([]time.Duration, len(indices))
	var rates []float64
	for k, i := range indices {
		reqs[k] = cfg.request(samples[i], i, lora[i])
		mine[k] = offsets[i]
		if sched != nil {
			rates = append(rates, sched.Rates[i])
		}
	}
	if !cfg.StartAt.IsZero() {
		if err := sleepUntil(ctx, cfg.StartAt, max(cfg.SpinWindow, 0)); err != nil {
			return nil, fmt.Errorf("run: waiting for the start time %s: %w", cfg.StartAt.Format(time.RFC3339Nano), err)
		}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.MaxDuration > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, cfg.MaxDuration, ErrMaxDuration)
		defer stop()
	}
	d := &dispatcher{cfg: &cfg, client: c, reqs: reqs, offsets: mine, rates: rates, spin: max(cfg.SpinWindow, 0)}
	probe := startHealth()
	d.run(runCtx, res)
	res.Health = probe.finish()
	if runCtx.Err() != nil && cut(res.Records) {
		res.Stopped = context.Cause(runCtx)
	}
	if cfg.Profile {
		// Stop the profiler even when the run was canceled, but do not
		// wait forever for a server that is gone.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := profile(pctx, profiler, cfg.BaseURL+"/stop_profile"); err != nil {
			res.Warnings = append(res.Warnings, err)
		}
	}
	return res, nil
}

// cut reports whether the stop of a run cut any request short (a deadline
// that passes after the last request finished stops nothing).
func cut(recs []metrics.Record) bool {
	for i := range recs {
		if recs[i].Unsent || recs[i].Failure == metrics.FailureCanceled {
			return true
		}
	}
	return false
}

// normalize fills defaults and checks the configuration.
func (cfg *Config) normalize() error {
	if cfg.Backend == "" {
		cfg.Backend = client.BackendOpenAI
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = cmp.Or(client.DefaultEndpoint(cfg.Backend), "/v1/completions")
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.BaseURL == "" {
		return errors.New("no base URL")
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q: want http://host:port or https://host:port", redact.String(cfg.BaseURL))
	}
	if cfg.Model == "" {
		return errors.New("no model")
	}
	if err := client.CheckEndpoint(cfg.Backend, cfg.BaseURL+cfg.Endpoint); err != nil {
		return err
	}
	if cfg.MaxConcurrency < 0 || cfg.NumWarmups < 0 {
		return errors.New("max concurrency and warm-ups must not be negative")
	}
	if cfg.WarmConnections < WarmAuto || cfg.WarmConnections > client.MaxWarmConnections {
		return fmt.Errorf("warm connections: %d is out of range (-1 for one per concurrent request, 0 to %d)", cfg.WarmConnections, client.MaxWarmConnections)
	}
	if err := cfg.checkLimits(); err != nil {
		return err
	}
	if cfg.TraceArrivals && cfg.RampUp != nil {
		return errors.New("trace replay and ramp-up both set the arrival times; choose one")
	}
	if cfg.TraceSpeed == 0 {
		cfg.TraceSpeed = 1
	}
	if !(cfg.TraceSpeed > 0) {
		return fmt.Errorf("trace speed must be positive, got %v", cfg.TraceSpeed)
	}
	if cfg.SpinWindow == 0 {
		cfg.SpinWindow = defaultSpinWindow
	}
	if cfg.ReadyInterval <= 0 {
		cfg.ReadyInterval = 5 * time.Second
	}
	if cfg.RequestIDPrefix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.RequestIDPrefix = "bench-" + hex.EncodeToString(b[:]) + "-"
	}
	return nil
}

// checkLimits checks the numbers against the limits above.
func (cfg *Config) checkLimits() error {
	ints := []struct {
		name     string
		v, limit int
	}{
		{"warm-ups", cfg.NumWarmups, MaxWarmups},
		{"max concurrency", cfg.MaxConcurrency, MaxConcurrencyLimit},
		{"max line bytes", cfg.MaxLineBytes, client.MaxLineBytesLimit},
	}
	for _, i := range ints {
		if i.v > i.limit {
			return fmt.Errorf("%s %d is over the maximum %d", i.name, i.v, i.limit)
		}
	}
	if cfg.MaxLineBytes < 0 {
		return fmt.Errorf("max line bytes must not be negative, got %d", cfg.MaxLineBytes)
	}
	durs := []struct {
		name string
		v    time.Duration
	}{
		{"ready timeout", cfg.ReadyTimeout}, {"ready interval", cfg.ReadyInterval},
		{"request timeout", cfg.RequestTimeout}, {"max duration", cfg.MaxDuration},
	}
	for _, d := range durs {
		if d.v > MaxTimeout {
			return fmt.Errorf("%s %v is over the maximum %v", d.name, d.v, MaxTimeout)
		}
	}
	return nil
}

// client builds the request client of the run, and its Warmer when the
// run warms connections.
//
// Without Config.HTTPClient the client picks its transport: its own
// HTTP/1.1 one for an http:// URL with no proxy, net/http otherwise.
func (cfg *Config) client() (*client.Client, *client.Warmer) {
	var w *client.Warmer
	if cfg.HTTPClient == nil && cfg.WarmConnections != 0 {
		w = client.NewWarmer()
	}
	return &client.Client{
		Backend:   cfg.Backend,
		URL:       cfg.BaseURL + cfg.Endpoint,
		Model:     cfg.Model,
		ModelName: cfg.ModelName,
		HTTP:      cfg.HTTPClient,
		Warmer:    w,
		MaxConns:  cfg.MaxConcurrency,
		Epoch:     time.Now(),
		Timeout:   cfg.RequestTimeout,
		Tokenizer: cfg.Tokenizer,
		Sampling:  cfg.Sampling,
		Logprobs:  cfg.Logprobs,
		IgnoreEOS: cfg.IgnoreEOS,
		ExtraBody: cfg.ExtraBody,
		Headers:   cfg.Headers,

		MaxLineBytes: cfg.MaxLineBytes,
	}, w
}

// warm dials the run's warm connections (see Config.WarmConnections).
func (cfg *Config) warm(ctx context.Context, w *client.Warmer, requests int) error {
	if w == nil {
		return nil
	}
	n := cfg.WarmConnections
	if n == WarmAuto {
		n = requests
		if cfg.MaxConcurrency > 0 {
			n = min(n, cfg.MaxConcurrency)
		}
	}
	_, err := w.Warm(ctx, cfg.BaseURL, min(n, client.MaxWarmConnections))
	return err
}

// request turns sample i into a client request.
func (cfg *Config) request(s dataset.Sample, i int, model string) client.Request {
	id := s.RequestID
	if id == "" {
		id = cfg.RequestIDPrefix + strconv.Itoa(i)
	}
	r := client.Request{
		Prompt:    s.Prompt,
		PromptLen: s.PromptLen,
		OutputLen: s.OutputLen,
		RequestID: id,
		Model:     model,
		Inputs:    s.Inputs,
		Documents: s.Documents,
	}
	if cfg.Backend == client.BackendVLLMRerank && r.Documents == nil {
		r.Documents = cfg.RerankDocuments
	}
	return r
}

// Arrivals returns when Run sends each sample, from the run's time zero:
// the arrival schedule of cfg's rate, burstiness, ramp-up and seed
// (NewSchedule, also returned), or under TraceArrivals the samples' own
// arrival times divided by TraceSpeed (0 means 1), with a nil Schedule. A
// prediction in virtual time (internal/twin) sends its requests at these
// times too.
func Arrivals(cfg Config, samples []dataset.Sample) ([]time.Duration, *Schedule, error) {
	if len(samples) == 0 {
		return nil, nil, errors.New("schedule: no requests")
	}
	if cfg.TraceArrivals {
		if cfg.TraceSpeed == 0 {
			cfg.TraceSpeed = 1
		}
		if !(cfg.TraceSpeed > 0) {
			return nil, nil, fmt.Errorf("trace speed must be positive, got %v", cfg.TraceSpeed)
		}
		return cfg.offsets(nil, samples), nil, nil
	}
	sched, err := NewSchedule(len(samples), cfg.RequestRate, cfg.Burstiness, cfg.RampUp, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	return sched.Offsets, sched, nil
}

// offsets returns each request's send time from the start of the run.
func (cfg *Config) offsets(sched *Schedule, samples []dataset.Sample) []time.Duration {
	if sched != nil {
		return sched.Offsets
	}
	out := make([]time.Duration, len(samples))
	for i, s := range samples {
		if s.HasArrival {
			out[i] = time.Duration(math.Round(float64(s.Arrival) / cfg.TraceSpeed))
		}
		if i > 0 && out[i] < out[i-1] {
			out[i] = out[i-1]
		}
	}
	return out
}
