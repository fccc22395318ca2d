package metrics_test

import (
	"fmt"
	"time"

	"github.com/servegate/servegate/internal/metrics"
)

func ExampleSummary_Value() {
	ms := time.Millisecond
	records := []metrics.Record{
		{Success: true, TTFT: 100 * ms, ITL: []time.Duration{10 * ms, 30 * ms}, Latency: 140 * ms, OutputTokens: 3, PromptLen: 10},
		{Success: true, TTFT: 200 * ms, Latency: 200 * ms, OutputTokens: 1, PromptLen: 10},
		{Failure: metrics.FailureTimeout, Error: "timeout"},
	}
	s := metrics.Summarize(records, 2*time.Second, metrics.Options{Goodput: map[string]float64{"ttft": 150}})
	for _, name := range []string{"completed", "failed", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "request_goodput", "failed_timeout"} {
		v, _ := s.Value(name)
		fmt.Printf("%s %.4g\n", name, v)
	}
	fmt.Println(metrics.KnownMetric("p99.9_itl_ms"), metrics.KnownMetric("p99.0_itl_ms"))
	// Output:
	// completed 2
	// failed 1
	// mean_ttft_ms 150
	// p99_ttft_ms 199
	// mean_tpot_ms 20
	// request_goodput 0.5
	// failed_timeout 1
	// true false
}
