package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// metrics holds what /metrics serves, under vLLM's metric names, labels and
// histogram buckets, in the Prometheus text format.
type metrics struct {
	model string
	start time.Time // for the _created gauges
	cache string    // the labels of vllm:cache_config_info

	mu             sync.Mutex
	promptTokens   int64
	genTokens      int64
	preemptions    int64
	prefixQueries  int64
	prefixHits     int64
	success        map[string]int64 // by finished_reason
	ttft, itl, e2e *histogram
	queue          *histogram
	prefill        *histogram
	decode         *histogram
	inference      *histogram
	promptHist     *histogram
	genHist        *histogram
	iterTokens     *histogram // tokens per engine step
	maxGenHist     *histogram // most tokens a request's choices generated
	nHist          *histogram // the n parameter
	maxTokensHist  *histogram // the max_tokens parameter
	tpot           *histogram // a request's mean time per output token
	prefillKV      *histogram // prompt tokens computed, cache hits excluded
	http           httpMetrics

	// Speculative decoding (exported only with spec_draft_tokens > 0, as
	// vLLM exports them only with a speculative config).
	specK                                  int
	specDrafts, specDraftTok, specAccepted int64
	specPerPos                             []int64
	// The KV offload tier (exported only with kv_offload_blocks > 0).
	offload                      bool
	offloadQueries, offloadHits  int64 // tokens
	offloadStored, offloadLoaded int64 // blocks
}

// Bucket bounds in seconds (tokens for the length histograms), as vLLM v0.13
// declares them.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// iterationBuckets are vLLM's bounds of vllm:iteration_tokens_total.
var iterationBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}

func newMetrics(p Params) *metrics {
	model, maxModelLen := p.Model, p.MaxModelLen
	return &metrics{
		model:         model,
		start:         time.Now(),
		cache:         cacheConfigLabels(p),
		iterTokens:    newHistogram(iterationBuckets),
		maxGenHist:    newHistogram(tokenBuckets(maxModelLen)),
		nHist:         newHistogram([]float64{1, 2, 5, 10, 20}),
		maxTokensHist: newHistogram(tokenBuckets(maxModelLen)),
		tpot:          newHistogram(itlBuckets),
		prefillKV:     newHistogram(tokenBuckets(maxModelLen)),
		http:          newHTTPMetrics(),
		success:       map[string]int64{},
		ttft:          newHistogram(ttftBuckets),
		itl:           newHistogram(itlBuckets),
		e2e:           newHistogram(e2eBuckets),
		queue:         newHistogram(e2eBuckets),
		prefill:       newHistogram(e2eBuckets),
		decode:        newHistogram(e2eBuckets),
		inference:     newHistogram(e2eBuckets),
		promptHist:    newHistogram(tokenBuckets(maxModelLen)),
		genHist:       newHistogram(tokenBuckets(maxModelLen)),
		specK:         p.SpecDraftTokens,
		specPerPos:    make([]int64, p.SpecDraftTokens),
		offload:       p.KVOffloadBlocks > 0 && p.EnablePrefixCaching,
	}
}

// specDraft records one sequence's verification of k draft tokens, a of
// them accepted, as vLLM's SpecDecodingStats.observe_draft does.
func (m *metrics) specDraft(k, a int) {
	m.mu.Lock()
	m.specDrafts++
	m.specDraftTok += int64(k)
	m.specAccepted += int64(a)
	for i := range a {
		m.specPerPos[i]++
	}
	m.mu.Unlock()
}

// offloadQuery records a prefix lookup in the offload tier: tokens asked
// for and tokens found (loaded back).
func (m *metrics) offloadQuery(queried, hit int) {
	m.mu.Lock()
	m.offloadQueries += int64(queried)
	m.offloadHits += int64(hit)
	m.mu.Unlock()
}

// offloadLoad counts blocks loaded back from the offload tier, every load
// a step is charged for (a sequence readmitted after a preemption loads
// again).
func (m *metrics) offloadLoad(blocks int) {
	m.mu.Lock()
	m.offloadLoaded += int64(blocks)
	m.mu.Unlock()
}

// offloadStore counts a block written to the offload tier.
func (m *metrics) offloadStore() {
	m.mu.Lock()
	m.offloadStored++
	m.mu.Unlock()
}

// pooled counts the prompt of an embeddings or rerank request.
func (m *metrics) pooled(prompt int) {
	m.mu.Lock()
	m.promptTokens += int64(prompt)
	m.mu.Unlock()
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

// generated counts one output token; the first token of a request also
// counts its prompt as processed.
func (m *metrics) generated(first bool, prompt int) {
	m.mu.Lock()
	m.genTokens++
	if first {
		m.promptTokens += int64(prompt)
	}
	m.mu.Unlock()
}

// iteration records the tokens of one engine step as vLLM counts them:
// the prompts of the requests that got their first token, plus the tokens
// generated.
func (m *metrics) iteration(tokens int) {
	m.mu.Lock()
	m.iterTokens.observe(float64(tokens))
	m.mu.Unlock()
}

// requestDone records a request's n parameter and the most tokens one of
// its n choices generated, once all of them have finished (vLLM records a
// parent request once, when its last child ends).
func (m *metrics) requestDone(n, maxGenerated int) {
	m.mu.Lock()
	m.nHist.observe(float64(n))
	m.maxGenHist.observe(float64(maxGenerated))
	m.mu.Unlock()
}

// finished records a sequence (one choice of a request) that ended, from
// its ground truth; maxTokens is the request's max_tokens.
func (m *metrics) finished(t *truthData, prompt int, reason string, maxTokens int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promptHist.observe(float64(prompt))
	m.genHist.observe(float64(len(t.TokenTimes)))
	m.prefillKV.observe(float64(prompt - max(t.CachedTokens, 0)))
	if maxTokens > 0 {
		m.maxTokensHist.observe(float64(maxTokens))
	}
	// vLLM's mean time per output token leaves out the first token.
	if n := len(t.TokenTimes); n > 1 {
		m.tpot.observe((t.TokenTimes[n-1] - t.TokenTimes[0]).Seconds() / float64(n-1))
	} else {
		m.tpot.observe(0)
	}
	if reason != "" {
		m.success[reason]++
	}
	if len(t.TokenTimes) > 0 {
		m.ttft.observe(t.TokenTimes[0].Seconds())
		for i := 1; i < len(t.TokenTimes); i++ {
			// With speculation, vLLM observes one latency per step's
			// output, not per token.
			if d := t.TokenTimes[i] - t.TokenTimes[i-1]; d > 0 || m.specK == 0 {
				m.itl.observe(d.Seconds())
			}
		}
		m.e2e.observe(t.TokenTimes[len(t.TokenTimes)-1].Seconds())
	}
	if t.FirstScheduled > 0 {
		m.queue.observe(t.FirstScheduled.Seconds())
		if t.Finished > 0 {
			m.inference.observe((t.Finished - t.FirstScheduled).Seconds())
		}
		if len(t.TokenTimes) > 0 {
			m.prefill.observe((t.TokenTimes[0] - t.FirstScheduled).Seconds())
			m.decode.observe((t.TokenTimes[len(t.TokenTimes)-1] - t.TokenTimes[0]).Seconds())
		}
	}
}

// write renders the Prometheus text exposition the way vLLM's
// prometheus_client does: floats everywhere, labels in alphabetical order,
// counters under their _total name, and a _created gauge after every
// counter and histogram.
func (m *metrics) write(w io.Writer, st engineStats) {
	model := fmt.Sprintf("%q", m.model)
	lbl := `engine="0",model_name=` + model
	created := num(float64(m.start.UnixNano()) / 1e9)
	createdGauge := func(name, help, labels string) {
		fmt.Fprintf(w, "# HELP %s_created %s\n# TYPE %s_created gauge\n%s_created{%s} %s\n", name, help, name, name, labels, created)
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", name, help, name, name, lbl, num(v))
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s_total %s\n# TYPE %s_total counter\n%s_total{%s} %s\n", name, help, name, name, lbl, num(float64(v)))
		createdGauge(name, help, lbl)
	}
	hist := func(h *histogram, name, help string) {
		h.write(w, name, help, model)
		createdGauge(name, help, lbl)
	}
	writeProcessMetrics(w)
	m.mu.Lock()
	defer m.mu.Unlock()
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(st.Running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(st.Waiting))
	const sleep = "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2."
	fmt.Fprintf(w, "# HELP vllm:engine_sleep_state %s\n# TYPE vllm:engine_sleep_state gauge\n", sleep)
	for _, st := range []struct {
		name  string
		value float64
	}{{"awake", 1}, {"weights_offloaded", 0}, {"discard_all", 0}} {
		fmt.Fprintf(w, "vllm:engine_sleep_state{%s,sleep_state=%q} %s\n", lbl, st.name, num(st.value))
	}
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", st.KVUsage)
	counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", m.prefixQueries)
	counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", m.prefixHits)
	// The offload tier is the simulator's only KV connector; there are no
	// multi-modal inputs.
	counter("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", m.offloadQueries)
	counter("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", m.offloadHits)
	counter("vllm:mm_cache_queries", "Multi-modal cache queries, in terms of number of queried items.", 0)
	counter("vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items.", 0)
	counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", m.preemptions)
	counter("vllm:prompt_tokens", "Number of prefill tokens processed.", m.promptTokens)
	counter("vllm:generation_tokens", "Number of generation tokens processed.", m.genTokens)
	const success = "Count of successfully processed requests."
	fmt.Fprintf(w, "# HELP vllm:request_success_total %s\n# TYPE vllm:request_success_total counter\n", success)
	for _, r := range finishReasons {
		fmt.Fprintf(w, "vllm:request_success_total{engine=\"0\",finished_reason=%q,model_name=%s} %s\n", r, model, num(float64(m.success[r])))
	}
	fmt.Fprintf(w, "# HELP vllm:request_success_created %s\n# TYPE vllm:request_success_created gauge\n", success)
	for _, r := range finishReasons {
		fmt.Fprintf(w, "vllm:request_success_created{engine=\"0\",finished_reason=%q,model_name=%s} %s\n", r, model, created)
	}
	hist(m.promptHist, "vllm:request_prompt_tokens", "Number of prefill tokens processed.")
	hist(m.genHist, "vllm:request_generation_tokens", "Number of generation tokens processed.")
	hist(m.iterTokens, "vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.")
	hist(m.maxGenHist, "vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.")
	hist(m.nHist, "vllm:request_params_n", "Histogram of the n request parameter.")
	hist(m.maxTokensHist, "vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.")
	hist(m.ttft, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.")
	hist(m.itl, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.")
	hist(m.tpot, "vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.")
	hist(m.e2e, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.")
	hist(m.queue, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.")
	hist(m.inference, "vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.")
	hist(m.prefill, "vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.")
	hist(m.decode, "vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.")
	hist(m.prefillKV, "vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).")
	if m.specK > 0 {
		counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", m.specDrafts)
		counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", m.specDraftTok)
		counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", m.specAccepted)
		const perPos = "Accepted tokens per draft position."
		fmt.Fprintf(w, "# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total %s\n# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n", perPos)
		for i, n := range m.specPerPos {
			fmt.Fprintf(w, "vllm:spec_decode_num_accepted_tokens_per_pos_total{%s,position=\"%d\"} %s\n", lbl, i, num(float64(n)))
		}
		fmt.Fprintf(w, "# HELP vllm:spec_decode_num_accepted_tokens_per_pos_created %s\n# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_created gauge\n", perPos)
		for i := range m.specPerPos {
			fmt.Fprintf(w, "vllm:spec_decode_num_accepted_tokens_per_pos_created{%s,position=\"%d\"} %s\n", lbl, i, created)
		}
	}
	if m.offload {
		// The simulator's own names: vLLM 0.13's offloading connector
		// exports no block counts.
		counter("vllm:kv_offload_stored_blocks", "Simulator: KV blocks written to the offload tier when evicted from the KV cache.", m.offloadStored)
		counter("vllm:kv_offload_loaded_blocks", "Simulator: KV blocks loaded back from the offload tier (every load: a sequence readmitted after a preemption loads again).", m.offloadLoaded)
	}
	fmt.Fprintf(w, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{%s} 1.0\n", m.cache)
	// The simulator's own: it says the server is a twin, so that
	// servegate sim calibrate refuses to fit a twin to a twin.
	gauge("servegate:sim_info", "Simulator: servegate's vLLM-compatible simulator, not a real server.", 1)
	m.http.write(w, created)
}

// cacheConfigLabels renders the labels of vllm:cache_config_info, in
// vLLM's (alphabetical) order, with the simulator's block size, block count
// and prefix caching and vLLM's defaults for the rest.
func cacheConfigLabels(p Params) string {
	pyBool := map[bool]string{true: "True", false: "False"}
	return fmt.Sprintf(`block_size="%d",cache_dtype="auto",calculate_kv_scales="False",cpu_kvcache_space_bytes="None",cpu_offload_gb="0.0",enable_prefix_caching="%s",engine="0",gpu_memory_utilization="0.9",is_attention_free="False",kv_cache_memory_bytes="None",kv_offloading_backend="None",kv_offloading_size="None",kv_sharing_fast_prefill="False",mamba_block_size="None",mamba_cache_dtype="auto",mamba_page_size_padded="None",mamba_ssm_cache_dtype="auto",num_cpu_blocks="None",num_gpu_blocks="%d",num_gpu_blocks_override="None",prefix_caching_hash_algo="sha256",sliding_window="None",swap_space="4.0"`,
		p.BlockSize, pyBool[p.EnablePrefixCaching], p.NumKVBlocks)
}

// finishReasons are the finished_reason label values vLLM exports.
var finishReasons = []string{"stop", "length", "abort", "error"}

// tokenBuckets is vLLM's 1-2-5 series up to the context length.
func tokenBuckets(maxLen int) []float64 {
	var b []float64
	for scale := 1.0; ; scale *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if m*scale > float64(maxLen) {
				return b
			}
			b = append(b, m*scale)
		}
	}
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

func (h *histogram) write(w io.Writer, name, help, model string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	h.writeSeries(w, name, `engine="0",`, ",model_name="+model)
}

// writeSeries writes the histogram's buckets, count and sum as one series
// whose labels are pre, then le, then post (in alphabetical order, as
// prometheus_client writes them; pre ends and post starts with a comma
// when not empty).
func (h *histogram) writeSeries(w io.Writer, name, pre, post string) {
	var cum int64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{%sle=%q%s} %s\n", name, pre, num(b), post, num(float64(cum)))
	}
	fmt.Fprintf(w, "%s_bucket{%sle=\"+Inf\"%s} %s\n", name, pre, post, num(float64(h.n)))
	labels := strings.TrimPrefix(strings.TrimSuffix(pre, ",")+post, ",")
	if labels != "" {
		labels = "{" + labels + "}"
	}
	fmt.Fprintf(w, "%s_count%s %s\n", name, labels, num(float64(h.n)))
	fmt.Fprintf(w, "%s_sum%s %s\n", name, labels, num(h.sum))
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
