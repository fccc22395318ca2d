package metrics

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/store"
)

// A RunInfo describes the run for the header of vLLM's result JSON.
type RunInfo struct {
	// Date is the run's date as vLLM writes it ("20060102-150405").
	Date string
	// Backend is the backend (endpoint type), e.g. "openai-chat".
	Backend string
	// Label is the result label; empty writes null.
	Label string
	// ModelID and TokenizerID name the model and its tokenizer.
	ModelID, TokenizerID string
	// NumPrompts is the number of prompts asked for.
	NumPrompts int
	// Metadata holds --metadata KEY=VALUE pairs, in order.
	Metadata [][2]string
	// RequestRate in req/s; +Inf (or 0) is written as "inf".
	RequestRate float64
	// Burstiness is the gamma shape; 0 is written as 1.
	Burstiness float64
	// MaxConcurrency is the concurrency limit; 0 writes null.
	MaxConcurrency int
	// RampUpStrategy, RampUpStartRPS and RampUpEndRPS describe a ramp-up;
	// written only when RampUpStrategy is set.
	RampUpStrategy               string
	RampUpStartRPS, RampUpEndRPS int
	// RPSChanges are the ramp-up's RPS change events.
	RPSChanges []RPSChange
	// Interrupted says the run was cut short (a signal, a test's end or
	// timeout) rather than ending by itself or at its maximum duration: the
	// result JSON then ends with "interrupted": true, the reason and the
	// number of requests never sent, so that no one takes it for a whole
	// run. Unset, none of these keys is written (vLLM's key set).
	Interrupted bool
	// InterruptedBy is the reason of an interrupted run.
	InterruptedBy string
	// Unsent is the number of requests an interrupted run never sent.
	Unsent int
	// Invalid, when set, says why the run is invalid: the load generator
	// fell behind, so the numbers say nothing about the server. Written
	// with Extras as "invalid" (null for a valid run).
	Invalid string
	// Extras adds servegate's extra metrics (queue time, schedule lag,
	// e2el with queue, lateness, failures by kind, the harness health
	// figures and "invalid") after vLLM's keys and, in a
	// detailed result, the per-request arrays that make the file a
	// complete record set for RecordsFromResult (request_ids, prompt_lens,
	// scheduled_times, dispatch_times, free_times, failure_kinds, unsent,
	// chunk_tokens) and, with goodput SLOs, goodput_met (whether each
	// request counted in request_goodput, for internal/gate's paired verdict).
	Extras bool
	// Appendix holds keys written after all others, in order, whatever
	// Extras says: servegate's server_metrics and capacity results. Values
	// are what the result writer knows (nil, bool, int, float64, string,
	// []float64, []string, []any, []Field for an object).
	Appendix []Field
}

// An RPSChange is a ramp-up event: the integer request rate reached and
// when (ISO 8601 local time without zone, as Python's isoformat writes).
type RPSChange struct {
	RPS       int
	Timestamp string
}

// perRequestKeys are the result keys only a detailed result keeps.
var perRequestKeys = []string{
	"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors",
	"start_times", "latencies",
	"request_ids", "prompt_lens", "scheduled_times", "dispatch_times", "free_times", "failure_kinds", "unsent", "chunk_tokens", "goodput_met",
	"ttfcs", "reasoning_tokens", "tool_calls", "finish_reasons",
	"session_ids", "session_turns", "session_tool_rounds", "tool_cap_hit",
}

// ResultJSON renders the summary as the file vllm bench serve
// --save-result writes, with the same keys, order and units (latencies in
// ms, durations and per-request times in seconds). With detailed it adds
// --save-detailed's per-request arrays (input_lens, output_lens, ttfts,
// itls, generated_texts, errors) and servegate's start_times and
// latencies (seconds from the start of the run, request order).
func (s *Summary) ResultJSON(info RunInfo, detailed bool) []byte {
	o := s.resultObject(info, detailed)
	return writePyJSON(nil, o)
}

func (s *Summary) resultObject(info RunInfo, detailed bool) object {
	var o object
	o.set("date", info.Date)
	o.set("endpoint_type", info.Backend)
	o.set("backend", info.Backend)
	o.set("label", nilIfEmpty(redact.String(info.Label)))
	o.set("model_id", info.ModelID)
	o.set("tokenizer_id", info.TokenizerID)
	o.set("num_prompts", info.NumPrompts)
	for _, kv := range info.Metadata {
		o.set(strings.TrimSpace(kv[0]), strings.TrimSpace(redact.String(kv[1])))
	}
	if info.RequestRate == 0 || math.IsInf(info.RequestRate, 1) {
		o.set("request_rate", "inf")
	} else {
		o.set("request_rate", info.RequestRate)
	}
	burst := info.Burstiness
	if burst == 0 {
		burst = 1
	}
	o.set("burstiness", burst)
	if info.MaxConcurrency > 0 {
		o.set("max_concurrency", info.MaxConcurrency)
	} else {
		o.set("max_concurrency", nil)
	}
	if info.RampUpStrategy != "" {
		o.set("ramp_up_strategy", info.RampUpStrategy)
		o.set("ramp_up_start_rps", info.RampUpStartRPS)
		o.set("ramp_up_end_rps", info.RampUpEndRPS)
	}
	for _, f := range s.benchmarkResult(info) {
		o.set(f.Key, f.Value)
	}
	if !detailed {
		for _, k := range perRequestKeys {
			o.del(k)
		}
	}
	for _, f := range info.Appendix {
		o.set(f.Key, f.Value)
	}
	return o
}

// benchmarkResult is the dict vLLM's benchmark() returns.
func (s *Summary) benchmarkResult(info RunInfo) object {
	pooling := s.Options.Pooling
	n := len(s.records)
	inputLens := make([]int, n)
	ttfts := make([]float64, n)
	itls := make([][]float64, n)
	texts := make([]string, n)
	errs := make([]string, n)
	starts := make([]float64, n)
	lats := make([]float64, n)
	for i := range s.records {
		r := &s.records[i]
		inputLens[i] = r.InputLen(pooling)
		ttfts[i] = seconds(r.TTFT)
		itls[i] = make([]float64, len(r.ITL))
		for j, g := range r.ITL {
			itls[i][j] = seconds(g)
		}
		texts[i] = r.GeneratedText
		errs[i] = redact.String(r.Error)
		starts[i] = seconds(r.Start)
		lats[i] = seconds(r.Latency)
	}
	var o object
	o.set("duration", seconds(s.Duration))
	o.set("completed", s.Completed)
	if pooling {
		o.set("total_input_tokens", s.TotalInput)
		o.set("request_throughput", s.RequestThroughput)
		o.set("total_token_throughput", s.TotalTokenThroughput)
		o.set("input_lens", inputLens)
		o.set("errors", errs)
	} else {
		o.set("failed", s.Failed)
		o.set("total_input_tokens", s.TotalInput)
		o.set("total_output_tokens", s.TotalOutput)
		o.set("request_throughput", s.RequestThroughput)
		if len(s.Options.Goodput) > 0 {
			o.set("request_goodput", s.RequestGoodput)
		} else {
			o.set("request_goodput", nil)
		}
		o.set("output_throughput", s.OutputThroughput)
		o.set("total_token_throughput", s.TotalTokenThroughput)
		o.set("input_lens", inputLens)
		o.set("output_lens", s.OutputLens)
		o.set("ttfts", ttfts)
		o.set("itls", itls)
		o.set("generated_texts", texts)
		o.set("errors", errs)
		o.set("max_output_tokens_per_s", s.MaxOutputTokensPerS)
		o.set("max_concurrent_requests", s.MaxConcurrentRequests)
	}
	o.set("start_times", starts)
	o.set("latencies", lats)
	if info.Extras {
		for _, f := range s.recordArrays() {
			o.set(f.Key, f.Value)
		}
		if s.Reasoning || s.ToolUse {
			for _, f := range s.streamArrays() {
				o.set(f.Key, f.Value)
			}
		}
	}
	if len(info.RPSChanges) > 0 {
		ev := make([]any, len(info.RPSChanges))
		for i, c := range info.RPSChanges {
			ev[i] = object{{"rps", c.RPS}, {"timestamp", c.Timestamp}}
		}
		o.set("rps_change_events", ev)
	}
	metricsOrder := vllmMetrics
	if pooling {
		metricsOrder = []string{"e2el"}
	}
	for _, m := range metricsOrder {
		if slices.Contains(s.Options.PercentileMetrics, m) {
			s.setStats(&o, m)
		}
	}
	if (s.Reasoning || s.ToolUse) && !pooling {
		s.setStats(&o, "ttfc")
		for _, n := range streamNames {
			o.set(n, must(s.Value(n)))
		}
	}
	if info.Extras {
		for _, m := range extraMetrics {
			s.setStats(&o, m)
		}
		o.set("failure_ratio", must(s.Value("failure_ratio")))
		for _, k := range FailureKinds {
			o.set("failed_"+string(k), s.FailuresByKind[k])
		}
		s.setHealth(&o)
		o.set(store.InvalidKey, nilIfEmpty(info.Invalid))
	}
	s.setSessions(&o)
	if info.Interrupted {
		o.set(store.InterruptedKey, true)
		o.set("interrupted_by", info.InterruptedBy)
		o.set("unsent_requests", info.Unsent)
	}
	return o
}

func (s *Summary) setStats(o *object, m string) {
	st, _ := s.stats(m)
	o.set("mean_"+m+"_ms", st.Mean)
	o.set("median_"+m+"_ms", st.Median)
	o.set("std_"+m+"_ms", st.Std)
	for _, p := range s.Options.Percentiles {
		o.set("p"+PercentileWord(p)+"_"+m+"_ms", st.Percentile(p))
	}
}

func must(v float64, _ bool) float64 { return v }

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// FieldsJSON renders fields as one JSON object, written the way the
// result files are (a capacity search that found no passing rate has no
// run to write, only its own keys).
func FieldsJSON(fields []Field) []byte { return writePyJSON(nil, object(fields)) }

// WriteResult writes a result JSON to path; with appendMode it appends
// to an existing file, a newline before the new object when the file is
// not empty, as vLLM's --append-result does.
func WriteResult(path string, data []byte, appendMode bool) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendMode {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	if appendMode {
		if st, err := f.Stat(); err == nil && st.Size() > 0 {
			data = append([]byte{'\n'}, data...)
		}
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write result: %w", werr)
	}
	return nil
}
