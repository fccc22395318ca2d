package sim

import (
	"fmt"
	"io"
	"strconv"
	"sync"
)

// metrics holds what /metrics serves, under vLLM's metric names, labels and
// histogram buckets, in the Prometheus text format.
type metrics struct {
	model string

	mu             sync.Mutex
	promptTokens   int64
	genTokens      int64
	preemptions    int64
	prefixQueries  int64
	prefixHits     int64
	success        map[string]int64 // by finished_reason
	ttft, itl, e2e *histogram
	queue          *histogram
	promptHist     *histogram
	genHist        *histogram
}

// Bucket bounds in seconds (tokens for the length histograms), as vLLM v0.13
// declares them.
var (
	ttftBuckets  = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets   = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets   = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	tokenBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}
)

func newMetrics(model string) *metrics {
	return &metrics{
		model:      model,
		success:    map[string]int64{},
		ttft:       newHistogram(ttftBuckets),
		itl:        newHistogram(itlBuckets),
		e2e:        newHistogram(e2eBuckets),
		queue:      newHistogram(e2eBuckets),
		promptHist: newHistogram(tokenBuckets),
		genHist:    newHistogram(tokenBuckets),
	}
}

func (m *metrics) prefixQuery(queried, hit int) {
	m.mu.Lock()
	m.prefixQueries += int64(queried)
	m.prefixHits += int64(hit)
	m.mu.Unlock()
}

func (m *metrics) preemption() {
	m.mu.Lock()
	m.preemptions++
	m.mu.Unlock()
}

func (m *metrics) generated() {
	m.mu.Lock()
	m.genTokens++
	m.mu.Unlock()
}

// finished records a request that ended, from its ground truth.
func (m *metrics) finished(t *truthData, prompt int, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promptTokens += int64(prompt)
	m.promptHist.observe(float64(prompt))
	m.genHist.observe(float64(len(t.TokenTimes)))
	if reason != "" && reason != "abort" {
		m.success[reason]++
	}
	if len(t.TokenTimes) > 0 {
		m.ttft.observe(t.TokenTimes[0].Seconds())
		for i := 1; i < len(t.TokenTimes); i++ {
			m.itl.observe((t.TokenTimes[i] - t.TokenTimes[i-1]).Seconds())
		}
		m.e2e.observe(t.TokenTimes[len(t.TokenTimes)-1].Seconds())
	}
	if t.FirstScheduled > 0 {
		m.queue.observe(t.FirstScheduled.Seconds())
	}
}

// write renders the Prometheus text exposition.
func (m *metrics) write(w io.Writer, st engineStats) {
	lbl := fmt.Sprintf(`engine="0",model_name=%q`, m.model)
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", name, help, name, name, lbl, num(v))
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s_total{%s} %d\n", name, help, name, name, lbl, v)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(st.Running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(st.Waiting))
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", st.KVUsage)
	counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", m.preemptions)
	counter("vllm:prompt_tokens", "Number of prefill tokens processed.", m.promptTokens)
	counter("vllm:generation_tokens", "Number of generation tokens processed.", m.genTokens)
	counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", m.prefixQueries)
	counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", m.prefixHits)
	fmt.Fprintf(w, "# HELP vllm:request_success Count of successfully processed requests.\n# TYPE vllm:request_success counter\n")
	for _, r := range []string{"stop", "length", "abort"} {
		fmt.Fprintf(w, "vllm:request_success_total{%s,finished_reason=%q} %d\n", lbl, r, m.success[r])
	}
	m.ttft.write(w, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", lbl)
	m.itl.write(w, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", lbl)
	m.e2e.write(w, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", lbl)
	m.queue.write(w, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", lbl)
	m.promptHist.write(w, "vllm:request_prompt_tokens", "Number of prefill tokens processed.", lbl)
	m.genHist.write(w, "vllm:request_generation_tokens", "Number of generation tokens processed.", lbl)
}

type histogram struct {
	bounds []float64
	counts []int64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      int64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]int64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i]++
	h.sum += v
	h.n++
}

func (h *histogram) write(w io.Writer, name, help, lbl string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum int64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{%s,le=%q} %d\n", name, lbl, num(b), cum)
	}
	fmt.Fprintf(w, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, lbl, h.n)
	fmt.Fprintf(w, "%s_count{%s} %d\n%s_sum{%s} %s\n", name, lbl, h.n, name, lbl, num(h.sum))
}

// num formats like Python's prometheus_client: 1.0, 0.25, 1e-06.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	for _, c := range s {
		if c == '.' || c == 'e' || c == 'I' || c == 'N' {
			return s
		}
	}
	return s + ".0"
}
