package report

// serverMetrics map servermetrics' names to benchstat units, in the order
// reported. The gate's default policy gates the speculative decoding ones
// when present (a drop in acceptance changes nothing but speed) and none
// of the others; a policy file may (server-preemptions: +0, for example).
var serverMetrics = []struct {
	name, unit, better string
	div                float64
}{
	{"prefix_cache_hit_rate", "server-prefix-hit-ratio", Higher, 1},
	{"num_preemptions", "server-preemptions", Lower, 1},
	{"kv_cache_usage_peak", "server-kv-peak-ratio", Lower, 1},
	{"num_requests_waiting_peak", "server-waiting-peak-reqs", Lower, 1},
	{"num_requests_running_peak", "server-running-peak-reqs", Lower, 1},
	{"p50_ttft_ms", "server-ttft-p50-sec", Lower, 1000},
	{"p99_ttft_ms", "server-ttft-p99-sec", Lower, 1000},
	{"p99_queue_time_ms", "server-queue-p99-sec", Lower, 1000},
	{"p99_e2e_latency_ms", "server-e2el-p99-sec", Lower, 1000},
	{"spec_decode_acceptance_rate", "server-spec-accept-ratio", Higher, 1},
	{"spec_decode_mean_acceptance_length", "server-spec-accept-len-tokens", Higher, 1},
}

// ServerBenchMetrics converts a run's server metrics into benchstat values.
// lookup returns a value by its servermetrics name; names it does not
// know are left out. Latencies are in seconds, estimated from the
// server's histogram buckets.
func ServerBenchMetrics(lookup func(name string) (float64, bool)) []BenchMetric {
	var out []BenchMetric
	for _, m := range serverMetrics {
		if v, ok := lookup(m.name); ok {
			out = append(out, BenchMetric{Unit: m.unit, Value: v / m.div, Better: m.better})
		}
	}
	return out
}
