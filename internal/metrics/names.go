package metrics

import (
	"slices"
	"strconv"
	"strings"
)

// Metric names follow vLLM's result JSON: scalar keys such as "completed",
// "failed" or "output_throughput", and per-metric statistics written as
// "<stat>_<metric>_ms" where stat is mean, median, std or p<percentile>
// (the percentile formatted as vLLM formats it: "p99", "p99.9", "p50") and
// metric is one of vLLM's ttft, tpot, itl, e2el or servegate's extras queue
// (client queue time), schedule_lag, e2el_with_queue and lateness (the
// load generator's own delay), ttfc (time to first content token, a
// reasoning model's first word of answer), and for session runs
// ttft_first_turn, ttft_later_turns and session_duration (session.go).
// servegate also knows failed_<kind> for each FailureKind, failure_ratio,
// the harness health names of Health, the names of what today's models
// stream (streamNames) and the session scalars (sessionScalars).

// vllmMetrics are vLLM's latency metrics in the order its result JSON
// lists them.
var vllmMetrics = []string{"ttft", "tpot", "itl", "e2el"}

// extraMetrics are servegate's latency metrics beside vLLM's.
var extraMetrics = []string{"queue", "schedule_lag", "e2el_with_queue", "lateness"}

// streamMetrics are the latency metrics of reasoning and tool-calling
// streams: ttfc, the time to the first content token.
var streamMetrics = []string{"ttfc"}

// streamNames are the scalar names of reasoning and tool-calling streams,
// in the order the result JSON writes them (when the run streamed
// reasoning or tool calls): reasoning tokens in total and per completed
// request, tool calls in total and per completed request, and the share
// of sent requests that failed as broken_tool_call.
var streamNames = []string{"total_reasoning_tokens", "mean_reasoning_tokens", "total_tool_calls", "mean_tool_calls", "broken_tool_call_ratio"}

var scalarNames = map[string]bool{
	"duration": true, "completed": true, "failed": true,
	"total_input_tokens": true, "total_output_tokens": true,
	"request_throughput": true, "request_goodput": true,
	"output_throughput": true, "total_token_throughput": true,
	"max_output_tokens_per_s": true, "max_concurrent_requests": true,
	"failure_ratio": true,
}

func init() {
	for _, k := range FailureKinds {
		scalarNames["failed_"+string(k)] = true
	}
	for _, n := range streamNames {
		scalarNames[n] = true
	}
}

// KnownMetric reports whether name is a metric Summary.Value can answer,
// for validating SLOs in scenario files. Percentiles are accepted in the
// form vLLM writes them ("p99", "p99.9", "p0", "p100"; not "p99.0").
func KnownMetric(name string) bool {
	if scalarNames[name] || isHealthName(name) || slices.Contains(sessionScalars, name) {
		return true
	}
	_, _, _, ok := parseStatName(name)
	return ok
}

// parseStatName splits "<stat>_<metric>_ms" into its stat ("mean",
// "median", "std" or "p"), percentile and metric.
func parseStatName(name string) (stat string, p float64, metric string, ok bool) {
	rest, found := strings.CutSuffix(name, "_ms")
	if !found {
		return "", 0, "", false
	}
	head, metric, found := strings.Cut(rest, "_")
	if !found || !isLatencyMetric(metric) {
		return "", 0, "", false
	}
	switch head {
	case "mean", "median", "std":
		return head, 0, metric, true
	}
	num, found := strings.CutPrefix(head, "p")
	if !found {
		return "", 0, "", false
	}
	p, err := strconv.ParseFloat(num, 64)
	if err != nil || p < 0 || p > 100 || PercentileWord(p) != num {
		return "", 0, "", false
	}
	return "p", p, metric, true
}

func isLatencyMetric(m string) bool {
	for _, list := range [][]string{vllmMetrics, extraMetrics, streamMetrics} {
		for _, n := range list {
			if m == n {
				return true
			}
		}
	}
	return slices.Contains(sessionMetrics, m)
}

// PercentileWord formats a percentile the way vLLM names its keys: an
// integral percentile without decimals ("99"), any other as Python's
// str(float) ("99.9").
func PercentileWord(p float64) string {
	if p == float64(int64(p)) {
		return strconv.FormatInt(int64(p), 10)
	}
	return PyFloat(p)
}

// Value looks a number up by its result-JSON name ("p99_ttft_ms",
// "mean_itl_ms", "failed", "output_throughput", "request_goodput", ...)
// or by one of servegate's extra names (see KnownMetric). Any percentile
// can be asked for, whether or not Options.Percentiles lists it.
// request_goodput is unknown when no goodput SLO was set; generation
// metrics are unknown in a pooling summary; the ttfc statistics are
// unknown when no successful request streamed content.
func (s *Summary) Value(name string) (float64, bool) {
	switch name {
	case "duration":
		return seconds(s.Duration), true
	case "completed":
		return float64(s.Completed), true
	case "failed":
		return float64(s.Failed), true
	case "total_input_tokens":
		return float64(s.TotalInput), true
	case "total_output_tokens":
		return float64(s.TotalOutput), !s.Options.Pooling
	case "request_throughput":
		return s.RequestThroughput, true
	case "request_goodput":
		return s.RequestGoodput, len(s.Options.Goodput) > 0 && !s.Options.Pooling
	case "output_throughput":
		return s.OutputThroughput, !s.Options.Pooling
	case "total_token_throughput":
		return s.TotalTokenThroughput, true
	case "max_output_tokens_per_s":
		return s.MaxOutputTokensPerS, !s.Options.Pooling
	case "max_concurrent_requests":
		return float64(s.MaxConcurrentRequests), !s.Options.Pooling
	case "failure_ratio":
		if n := s.Completed + s.Failed; n > 0 {
			return float64(s.Failed) / float64(n), true
		}
		return 0, true
	case "total_reasoning_tokens":
		return float64(s.TotalReasoningTokens), !s.Options.Pooling
	case "mean_reasoning_tokens":
		return perCompleted(s.TotalReasoningTokens, s.Completed), !s.Options.Pooling
	case "total_tool_calls":
		return float64(s.TotalToolCalls), !s.Options.Pooling
	case "mean_tool_calls":
		return perCompleted(s.TotalToolCalls, s.Completed), !s.Options.Pooling
	case "broken_tool_call_ratio":
		if n := s.Completed + s.Failed; n > 0 {
			return float64(s.FailuresByKind[FailureBrokenToolCall]) / float64(n), !s.Options.Pooling
		}
		return 0, !s.Options.Pooling
	}
	if isHealthName(name) {
		return s.Health.value(name, s.Duration)
	}
	if slices.Contains(sessionScalars, name) {
		return s.sessionValue(name)
	}
	if kind, ok := strings.CutPrefix(name, "failed_"); ok && scalarNames[name] {
		return float64(s.FailuresByKind[FailureKind(kind)]), true
	}
	stat, p, metric, ok := parseStatName(name)
	if !ok {
		return 0, false
	}
	st, ok := s.stats(metric)
	if !ok {
		return 0, false
	}
	switch stat {
	case "mean":
		return st.Mean, true
	case "median":
		return st.Median, true
	case "std":
		return st.Std, true
	}
	return st.Percentile(p), true
}

// stats returns the Stats of a latency metric by its short name.
func (s *Summary) stats(metric string) (Stats, bool) {
	gen := !s.Options.Pooling
	switch metric {
	case "ttft":
		return s.TTFT, gen
	case "tpot":
		return s.TPOT, gen
	case "itl":
		return s.ITL, gen
	case "e2el":
		return s.E2EL, true
	case "queue":
		return s.Queue, true
	case "schedule_lag":
		return s.ScheduleLag, true
	case "e2el_with_queue":
		return s.E2ELWithQueue, true
	case "lateness":
		return s.Lateness, true
	case "ttfc":
		return s.TTFC, gen && s.TTFCCount > 0
	}
	return s.Sessions.stats(metric)
}

// perCompleted is n per completed request, 0 when none completed.
func perCompleted(n, completed int) float64 {
	if completed == 0 {
		return 0
	}
	return float64(n) / float64(completed)
}
