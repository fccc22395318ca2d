// Package report turns a run's summary into what people and tools read:
// benchfmt files for benchstat and the gate, SLO tables, and (on other
// files) HTML, plots and the console summary.
package report

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/store"
)

// Directions of a benchstat unit (the better= value of its metadata).
const (
	// Lower means smaller values are better (latencies, failures).
	Lower = "lower"
	// Higher means larger values are better (throughputs, goodput).
	Higher = "higher"
)

// A BenchMetric is one value in benchstat's units: latencies in seconds
// with a -sec suffix, rates in tok/s, req/s, goodput-req/s, ratios as
// *-ratio. Never ms (benchstat would scale it as milli-milliseconds).
type BenchMetric struct {
	// Unit is the benchstat unit, such as ttft-p99-sec.
	Unit string
	// Value is in Unit, at full precision.
	Value float64
	// Better is Lower or Higher.
	Better string
}

// latencyMetrics are the vLLM latency metrics, in the order reported.
var latencyMetrics = []string{"ttft", "tpot", "itl", "e2el"}

// rateMetrics map result-JSON names to benchstat units, in the order
// reported.
var rateMetrics = []struct {
	name, unit, better string
}{
	{"request_throughput", "req/s", Higher},
	{"request_goodput", "goodput-req/s", Higher},
	{"output_throughput", "tok/s", Higher},
	{"total_token_throughput", "total-tok/s", Higher},
	{"max_output_tokens_per_s", "peak-tok/s", Higher},
	{"goodput_ratio", "goodput-ratio", Higher},
	{"failure_ratio", "fail-ratio", Lower},
}

// BenchMetrics converts a run's summary into benchstat values. lookup
// returns a value by its result-JSON name (metrics.Summary.Value, extended
// with scenario.WithDerived); names it does not know are left out. For
// each of ttft, tpot, itl and e2el it reports the mean, the median (p50)
// and each of percentiles, in seconds; a run that streamed reasoning or
// tool calls adds the same for ttfc (time to first content token) and
// broken-tool-call-ratio.
//
// A run with no successful request ("completed" is 0) reports only its
// fail-ratio (1): no latency, no throughput and no goodput-ratio, which
// are measured on successful requests. The result JSON writes 0 for them,
// as vLLM does, and a 0 latency would read as the best ever measured. A
// run that sent nothing (no completed and no failed request) reports no
// fail-ratio either.
func BenchMetrics(lookup func(name string) (float64, bool), percentiles []float64) []BenchMetric {
	completed, okC := lookup("completed")
	failed, okF := lookup("failed")
	measured := !okC || completed > 0
	sent := !okC || !okF || completed+failed > 0
	var out []BenchMetric
	add := func(name, unit, better string, div float64) {
		if v, ok := lookup(name); ok {
			out = append(out, BenchMetric{Unit: unit, Value: v / div, Better: better})
		}
	}
	for _, m := range latencyMetrics {
		if !measured {
			break
		}
		add("mean_"+m+"_ms", m+"-mean-sec", Lower, 1000)
		add("median_"+m+"_ms", m+"-p50-sec", Lower, 1000)
		for _, p := range percentiles {
			if p == 50 {
				continue
			}
			ps := PercentileWord(p)
			add("p"+ps+"_"+m+"_ms", m+"-p"+ps+"-sec", Lower, 1000)
		}
	}
	if measured {
		out = append(out, sessionBenchMetrics(lookup, percentiles)...)
	}
	for _, r := range rateMetrics {
		if counts := r.name == "failure_ratio"; (!counts && !measured) || (counts && !sent) {
			continue
		}
		add(r.name, r.unit, r.better, 1)
	}
	if streamed(lookup) {
		if measured {
			add("mean_ttfc_ms", "ttfc-mean-sec", Lower, 1000)
			add("median_ttfc_ms", "ttfc-p50-sec", Lower, 1000)
			for _, p := range percentiles {
				if p != 50 {
					ps := PercentileWord(p)
					add("p"+ps+"_ttfc_ms", "ttfc-p"+ps+"-sec", Lower, 1000)
				}
			}
		}
		if sent {
			add("broken_tool_call_ratio", "broken-tool-call-ratio", Lower, 1)
		}
	}
	return out
}

// sessionLatencies map the session latency metrics (metrics' names) to
// their benchstat unit stems.
var sessionLatencies = []struct{ name, stem string }{
	{"ttft_first_turn", "ttft-first"},
	{"ttft_later_turns", "ttft-later"},
	{"session_duration", "session-duration"},
}

// sessionScalars map the session scalars to benchstat units.
var sessionScalars = []struct{ name, unit, better string }{
	{"session_goodput_ratio", "session-goodput-ratio", Higher},
	{"tool_rounds", "tool-rounds", Lower},
	{"tool_cap_hits", "tool-cap-hits", Lower},
}

// sessionBenchMetrics are a session run's own values (lookup knows them
// only for a session run): TTFT of first and later turns and session
// duration in seconds (mean, p50 and each percentile), session goodput,
// tool rounds and tool-cap hits.
func sessionBenchMetrics(lookup func(name string) (float64, bool), percentiles []float64) []BenchMetric {
	var out []BenchMetric
	add := func(name, unit, better string, div float64) {
		if v, ok := lookup(name); ok {
			out = append(out, BenchMetric{Unit: unit, Value: v / div, Better: better})
		}
	}
	for _, m := range sessionLatencies {
		add("mean_"+m.name+"_ms", m.stem+"-mean-sec", Lower, 1000)
		add("median_"+m.name+"_ms", m.stem+"-p50-sec", Lower, 1000)
		for _, p := range percentiles {
			if p == 50 {
				continue
			}
			ps := PercentileWord(p)
			add("p"+ps+"_"+m.name+"_ms", m.stem+"-p"+ps+"-sec", Lower, 1000)
		}
	}
	for _, s := range sessionScalars {
		add(s.name, s.unit, s.better, 1)
	}
	return out
}

// streamed reports whether a run streamed reasoning or tool calls (or
// failed on them): only then are the time to first content token
// (ttfc-mean-sec, ttfc-p50-sec, ttfc-p<P>-sec) and the broken tool call
// ratio (broken-tool-call-ratio) written, so that a plain run's units
// stay what they were.
func streamed(lookup func(name string) (float64, bool)) bool {
	for _, name := range []string{"total_reasoning_tokens", "total_tool_calls", "failed_broken_tool_call", "failed_reasoning_after_content"} {
		if v, ok := lookup(name); ok && v > 0 {
			return true
		}
	}
	return false
}

// Interrupted returns the configuration entry that marks a result line
// as coming from an interrupted run: "interrupted: true". The gate
// refuses such a line (store.LineRefusal).
func Interrupted() BenchConfig {
	return BenchConfig{Key: store.InterruptedKey, Value: "true"}
}

// Invalid returns the configuration entry that marks a result line as
// coming from an invalid run, with the reason: "invalid: <reason>". An
// empty reason reads "unspecified", never an empty value (which benchfmt
// would read as deleting the key).
func Invalid(reason string) BenchConfig {
	if strings.TrimSpace(reason) == "" {
		reason = "unspecified"
	}
	return BenchConfig{Key: store.InvalidKey, Value: reason}
}

// healthMetrics map the load generator's health figures (result-JSON
// names, metrics.Health) to benchstat units. They say whether a run was
// valid, not how fast the server is: the gate's default policy does not
// gate them.
var healthMetrics = []struct {
	name, unit string
	div        float64
}{
	{"p99_lateness_ms", "lateness-p99-sec", 1000},
	{"mean_lateness_ms", "lateness-mean-sec", 1000},
	{"client_cpu_ratio", "client-cpu-ratio", 1},
	{"gc_pause_ms", "gc-pause-sec", 1000},
	{"sched_latency_p99_ms", "sched-latency-p99-sec", 1000},
	{"runqueue_wait_ratio", "runqueue-wait-ratio", 1},
	{"load_avg_1m", "loadavg-1m", 1},
}

// HealthMetrics converts the harness health figures of a run into
// benchstat values (all better=lower): lateness-p99-sec,
// lateness-mean-sec, client-cpu-ratio, gc-pause-sec,
// sched-latency-p99-sec, runqueue-wait-ratio and loadavg-1m. Figures lookup does not know are
// left out.
func HealthMetrics(lookup func(name string) (float64, bool)) []BenchMetric {
	var out []BenchMetric
	for _, h := range healthMetrics {
		if v, ok := lookup(h.name); ok {
			out = append(out, BenchMetric{Unit: h.unit, Value: v / h.div, Better: Lower})
		}
	}
	return out
}

// A BenchConfig is one file configuration line of a benchfmt file, such as
// "model: llama".
type BenchConfig struct {
	// Key is lower-case with no spaces (model, target, scenario-sha).
	Key string
	// Value is one line of text.
	Value string
}

// A BenchfmtWriter writes servegate results in the Go benchmark format with
// benchfmt.Writer: values at full precision, file configuration before the
// results it applies to, and a "Unit X better=lower|higher" line before a
// unit's first use.
type BenchfmtWriter struct {
	w     *benchfmt.Writer
	units map[string]bool
}

// NewBenchfmtWriter returns a writer to w.
func NewBenchfmtWriter(w io.Writer) *BenchfmtWriter {
	return &BenchfmtWriter{w: benchfmt.NewWriter(w), units: map[string]bool{}}
}

// WriteBenchfmtResult writes one result line. name is the benchmark name
// without its "Benchmark" prefix ("Scenarios/scenario=chat-poisson-2");
// iterations is 1 for one scenario run.
func (w *BenchfmtWriter) WriteBenchfmtResult(name string, iterations int, config []BenchConfig, metrics []BenchMetric) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("write benchfmt: benchmark name %q is empty or has spaces", name)
	}
	if len(metrics) == 0 {
		// benchfmt readers (benchstat, the gate) reject a result line
		// without values as a syntax error and drop it with a warning.
		return fmt.Errorf("write benchfmt: %s: no values (a run that sent no request reports none)", name)
	}
	for _, m := range metrics {
		if w.units[m.Unit] {
			continue
		}
		if m.Unit == "" || strings.ContainsAny(m.Unit, " \t\r\n") {
			return fmt.Errorf("write benchfmt: unit %q is empty or has spaces", m.Unit)
		}
		meta := &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: m.Unit, Key: "better"}, OrigUnit: m.Unit, Value: m.Better}
		if err := w.w.Write(meta); err != nil {
			return fmt.Errorf("write benchfmt: %w", err)
		}
		w.units[m.Unit] = true
	}
	res := &benchfmt.Result{Name: benchfmt.Name(name), Iters: iterations}
	for _, c := range config {
		if c.Key == "" || strings.ContainsAny(c.Key, " \t\r\n:") {
			return fmt.Errorf("write benchfmt: configuration key %q is empty or has spaces or a colon", c.Key)
		}
		v := strings.Join(strings.Fields(redact.String(c.Value)), " ")
		if v == "" {
			continue // an empty value would read as the key's deletion
		}
		res.Config = append(res.Config, benchfmt.Config{Key: c.Key, Value: []byte(v), File: true})
	}
	for _, m := range metrics {
		res.Values = append(res.Values, benchfmt.Value{Value: m.Value, Unit: m.Unit})
	}
	if err := w.w.Write(res); err != nil {
		return fmt.Errorf("write benchfmt: %w", err)
	}
	return nil
}
