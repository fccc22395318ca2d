package metrics

import (
	"math"
	"time"
)

// Options selects what a Summary reports, like vllm bench serve's
// --percentile-metrics, --metric-percentiles and --goodput flags.
type Options struct {
	// PercentileMetrics are the metrics whose mean, median, std and
	// percentiles go into the result JSON. Default: ttft, tpot, itl for
	// generation and e2el for pooling (vLLM's defaults).
	PercentileMetrics []string
	// Percentiles are the percentiles reported (0–100). Default: 99.
	Percentiles []float64
	// Goodput holds the goodput SLOs in milliseconds, keyed "ttft", "tpot"
	// or "e2el". A request is good when it meets all of them.
	Goodput map[string]float64
	// Pooling selects vLLM's metrics for embeddings and rerank requests
	// (calculate_metrics_for_embeddings) instead of generation metrics.
	Pooling bool
}

// A Summary carries every number of vLLM's result JSON plus servegate's
// extras. Latencies are in milliseconds, throughputs per second.
type Summary struct {
	// Options are the options the summary was computed with, defaults
	// filled in.
	Options Options
	// Duration is the benchmark duration the rates divide by.
	Duration time.Duration
	// Completed and Failed count successful and failed requests.
	Completed, Failed int
	// TotalInput and TotalOutput are the prompt and generated tokens of
	// the successful requests.
	TotalInput, TotalOutput int
	// RequestThroughput is completed requests per second.
	RequestThroughput float64
	// RequestGoodput is good requests per second; meaningful only when
	// Options.Goodput is set.
	RequestGoodput float64
	// OutputThroughput is generated tokens per second.
	OutputThroughput float64
	// TotalTokenThroughput is prompt plus generated tokens per second.
	TotalTokenThroughput float64
	// MaxOutputTokensPerS is the most output tokens seen in one
	// one-second bucket, MaxConcurrentRequests the most requests active
	// in one bucket.
	MaxOutputTokensPerS   float64
	MaxConcurrentRequests int
	// TTFT, TPOT, ITL and E2EL are vLLM's latency metrics.
	TTFT, TPOT, ITL, E2EL Stats
	// TTFC is the time to the first content token (Record.FirstContent)
	// of the successful requests that streamed content: with a reasoning
	// model, TTFT plus the thinking. Named "ttfc" in "<stat>_ttfc_ms".
	TTFC Stats
	// TTFCCount is how many requests TTFC covers; its names are unknown
	// when it is 0.
	TTFCCount int
	// TotalReasoningTokens and TotalToolCalls sum Record.ReasoningTokens
	// and the tool calls of the successful requests.
	TotalReasoningTokens, TotalToolCalls int
	// Reasoning and ToolUse say whether any sent request streamed
	// reasoning (or failed as reasoning_after_content), or tool calls (or
	// failed as broken_tool_call). The result JSON carries the keys of
	// the time to first content, reasoning and tool calls only then, so
	// that a run with neither keeps vLLM's key set.
	Reasoning, ToolUse bool
	// Queue is the client queue time (waiting for a concurrency slot) of
	// every sent request.
	Queue Stats
	// ScheduleLag is send time minus scheduled time of every sent request.
	ScheduleLag Stats
	// Lateness is send time minus the time the engine was free to send
	// (Record.Free) of every sent request: how far the load generator
	// fell behind its schedule, waits for a concurrency slot excluded.
	Lateness Stats
	// Health is how the load generator's process fared during the run;
	// the engine fills it (Health.Measured false when nothing was read).
	Health Health
	// E2ELWithQueue is the end-to-end latency measured from the scheduled
	// send time, for the successful requests.
	E2ELWithQueue Stats
	// FailuresByKind counts failed requests by kind.
	FailuresByKind map[FailureKind]int
	// Sessions summarise the sessions of a multi-turn run; nil when no
	// record belongs to a session (a single-turn run).
	Sessions *SessionStats
	// OutputLens holds each request's output tokens (0 when failed), in
	// record order, as vLLM's output_lens.
	OutputLens []int

	records []Record
}

// Summarize computes the summary of records for a run that took duration,
// the way vLLM's calculate_metrics (or calculate_metrics_for_embeddings
// when opts.Pooling) does. Records marked Unsent are left out.
func Summarize(records []Record, duration time.Duration, opts Options) *Summary {
	if len(opts.PercentileMetrics) == 0 {
		opts.PercentileMetrics = []string{"ttft", "tpot", "itl"}
		if opts.Pooling {
			opts.PercentileMetrics = []string{"e2el"}
		}
	}
	if len(opts.Percentiles) == 0 {
		opts.Percentiles = []float64{99}
	}
	s := &Summary{
		Options:        opts,
		Duration:       duration,
		FailuresByKind: map[FailureKind]int{},
		OutputLens:     make([]int, len(records)),
		records:        records,
	}
	dur := seconds(duration)
	var ttfts, tpots, allTPOTs, e2els, ttfcs []float64
	var queues, lags, late, e2elq []time.Duration
	nITL := 0
	for i := range records {
		if records[i].Success {
			nITL += len(records[i].ITL)
		}
	}
	itls := make([]time.Duration, 0, nITL)
	for i := range records {
		r := &records[i]
		if r.Unsent {
			continue
		}
		queues = append(queues, r.Start-r.Dispatched)
		lags = append(lags, r.Start-r.Scheduled)
		late = append(late, r.Start-r.Free)
		s.noteStreamed(r)
		if !r.Success {
			s.Failed++
			kind := r.Failure
			if kind == FailureNone {
				kind = FailureStream
			}
			s.FailuresByKind[kind]++
			continue
		}
		s.Completed++
		lat := seconds(r.Latency)
		e2els = append(e2els, lat)
		e2elq = append(e2elq, r.Start-r.Scheduled+r.Latency)
		if opts.Pooling {
			s.TotalInput += r.InputLen(true)
			continue
		}
		out := r.OutputTokens
		s.OutputLens[i] = out
		s.TotalOutput += out
		s.TotalInput += r.PromptLen
		ttft := seconds(r.TTFT)
		tpot := r.TPOTSeconds()
		if out > 1 {
			tpots = append(tpots, tpot)
		}
		allTPOTs = append(allTPOTs, tpot)
		itls = append(itls, r.ITL...)
		ttfts = append(ttfts, ttft)
		if r.FirstContent > 0 {
			ttfcs = append(ttfcs, seconds(r.FirstContent))
		}
		s.TotalReasoningTokens += r.ReasoningTokens
		s.TotalToolCalls += len(r.ToolCalls)
	}
	s.RequestThroughput = float64(s.Completed) / dur
	s.OutputThroughput = float64(s.TotalOutput) / dur
	s.TotalTokenThroughput = float64(s.TotalInput+s.TotalOutput) / dur
	if len(opts.Goodput) > 0 {
		s.RequestGoodput = float64(goodCount(opts.Goodput, ttfts, allTPOTs, e2els)) / dur
	}
	s.TTFT, s.TPOT, s.ITL, s.E2EL = newStats(ttfts), newStats(tpots), newDurationStats(itls), newStats(e2els)
	s.Queue, s.ScheduleLag, s.E2ELWithQueue = newDurationStats(queues), newDurationStats(lags), newDurationStats(e2elq)
	s.Lateness = newDurationStats(late)
	s.TTFC, s.TTFCCount = newStats(ttfcs), len(ttfcs)
	if !opts.Pooling {
		s.MaxOutputTokensPerS, s.MaxConcurrentRequests = peaks(records)
	}
	s.Sessions = summarizeSessions(records, opts.Goodput)
	return s
}

// noteStreamed notes whether a sent request streamed reasoning or tool
// calls (see Summary.Reasoning and ToolUse).
func (s *Summary) noteStreamed(r *Record) {
	if r.FirstReasoning > 0 || r.ReasoningTokens > 0 || r.Failure == FailureReasoningAfterContent {
		s.Reasoning = true
	}
	if len(r.ToolCalls) > 0 || r.Failure == FailureBrokenToolCall {
		s.ToolUse = true
	}
}

// seconds converts a duration to float seconds exactly as a division of
// nanoseconds by 1e9.
func seconds(d time.Duration) float64 { return float64(d) / 1e9 }

// TPOTSeconds is the request's time per output token after the first, in
// seconds, as vllm bench serve computes it: (latency − TTFT) / (output
// tokens − 1); 0 for a request of fewer than two tokens.
func (r *Record) TPOTSeconds() float64 {
	if r.OutputTokens < 2 {
		return 0
	}
	return (seconds(r.Latency) - seconds(r.TTFT)) / float64(r.OutputTokens-1)
}

// goodCount counts the requests that meet every SLO (milliseconds).
func goodCount(slo map[string]float64, ttfts, tpots, e2els []float64) int {
	type check struct {
		vals  []float64
		limit float64
	}
	var checks []check
	for _, c := range []struct {
		name string
		vals []float64
	}{{"ttft", ttfts}, {"tpot", tpots}, {"e2el", e2els}} {
		if v, ok := slo[c.name]; ok {
			checks = append(checks, check{c.vals, v / 1000})
		}
	}
	good := 0
	if len(checks) == 0 {
		return 0
	}
	for i := range ttfts {
		ok := true
		for _, c := range checks {
			if !(c.limit >= c.vals[i]) {
				ok = false
			}
		}
		if ok {
			good++
		}
	}
	return good
}

// PerSecond returns the output tokens and the concurrent requests of each
// one-second bucket of a run, counted as vllm bench serve counts them for
// its peak metrics and plots: buckets start at the earliest start of a
// successful request; every output chunk (first token, then one per
// inter-token gap) counts one token in the bucket it arrived in, or the
// tokens the server said it carried when the record has per-chunk counts;
// a request counts as concurrent in every bucket from its start to its
// end, inclusive. Failed requests are left out. Both slices are nil when
// no request succeeded.
func PerSecond(records []Record) (tokens, concurrent []float64) {
	first := true
	var minStart, maxEnd float64
	for i := range records {
		r := &records[i]
		if !r.Success {
			continue
		}
		st, end := seconds(r.Start), seconds(r.Start)+seconds(r.Latency)
		if first || st < minStart {
			minStart = st
		}
		if first || end > maxEnd {
			maxEnd = end
		}
		first = false
	}
	if first {
		return nil, nil
	}
	n := int(math.Ceil(maxEnd-minStart)) + 1
	tokens = make([]float64, n)
	concurrent = make([]float64, n)
	for i := range records {
		r := &records[i]
		if !r.Success {
			continue
		}
		st := seconds(r.Start)
		t := st + seconds(r.TTFT)
		addTokens(tokens, int(t-minStart), chunkTokens(r, 0))
		for j, g := range r.ITL {
			t += seconds(g)
			addTokens(tokens, int(t-minStart), chunkTokens(r, j+1))
		}
		from, to := int(st-minStart), int(st+seconds(r.Latency)-minStart)
		for sec := from; sec <= to && sec < n; sec++ {
			concurrent[sec]++
		}
	}
	return tokens, concurrent
}

// peaks computes vLLM's peak output tokens per second and the concurrent
// requests in the busiest second (PerSecond's largest buckets).
func peaks(records []Record) (float64, int) {
	tokens, conc := PerSecond(records)
	var maxTok, maxConc float64
	for i := range tokens {
		maxTok = max(maxTok, tokens[i])
		maxConc = max(maxConc, conc[i])
	}
	return maxTok, int(maxConc)
}

func addTokens(buckets []float64, b, n int) {
	if b >= 0 && b < len(buckets) {
		buckets[b] += float64(n)
	}
}

func chunkTokens(r *Record, i int) int {
	if r.ChunkTokens == nil || i >= len(r.ChunkTokens) {
		return 1
	}
	return r.ChunkTokens[i]
}
