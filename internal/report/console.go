package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servegate/servegate/internal/metrics"
)

// MetricValues looks a number up by its vLLM result-JSON name
// ("completed", "p99_ttft_ms", "output_throughput", ...).
// *metrics.Summary satisfies it.
type MetricValues interface {
	Value(name string) (float64, bool)
}

// A ConsoleSummary says what WriteConsoleSummary prints: the run's numbers
// and the settings that decide which lines vllm bench serve shows.
type ConsoleSummary struct {
	// Values holds the numbers, looked up by result-JSON name.
	Values MetricValues
	// Pooling is true for embeddings and rerank runs: no generated-token
	// lines and no TTFT, TPOT or ITL sections.
	Pooling bool
	// MaxConcurrency is --max-concurrency; 0 omits its line (vLLM's None).
	MaxConcurrency int
	// RequestRate is --request-rate in req/s; +Inf (or 0) omits its line.
	RequestRate float64
	// Goodput adds the request goodput line (vLLM prints it when --goodput
	// is given).
	Goodput bool
	// PercentileMetrics selects the latency sections among ttft, tpot, itl
	// and e2el. Default: ttft,tpot,itl (e2el for pooling runs).
	PercentileMetrics []string
	// Percentiles are the percentile lines of each section. Default: 99.
	Percentiles []float64
}

// latencySections are the sections in the order vLLM prints them.
var latencySections = []struct{ key, name, header string }{
	{"ttft", "TTFT", "Time to First Token"},
	{"tpot", "TPOT", "Time per Output Token (excl. 1st token)"},
	{"itl", "ITL", "Inter-token Latency"},
	{"e2el", "E2EL", "End-to-end Latency"},
}

// WriteConsoleSummary prints vllm bench serve's "Serving Benchmark Result"
// block: the same labels, order, widths and number formats, so scripts
// that scrape vLLM's output read servegate's too. It fails when a number
// the block needs is missing from s.Values.
func WriteConsoleSummary(w io.Writer, s ConsoleSummary) error {
	rows, err := consoleRows(s)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range rows {
		if r.Section != "" {
			b.WriteString(centre(r.Section, r.Fill) + "\n")
			continue
		}
		fmt.Fprintf(&b, "%-40s %-10s\n", r.Label, r.Value)
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// A summaryRow is one line of the console summary: a section title or a
// label with its formatted value.
type summaryRow struct {
	Section string // title of a section line; empty for a value line
	Fill    byte   // '=' or '-' around a section title
	Label   string
	Value   string
}

// consoleRows lists the summary's lines in vLLM's order.
func consoleRows(s ConsoleSummary) ([]summaryRow, error) {
	c := consoleWriter{values: s.Values}
	c.section(" Serving Benchmark Result ", '=')
	c.int("Successful requests:", "completed")
	c.int("Failed requests:", "failed")
	if s.MaxConcurrency > 0 {
		c.line("Maximum request concurrency:", strconv.Itoa(s.MaxConcurrency))
	}
	if s.RequestRate > 0 && !math.IsInf(s.RequestRate, 1) {
		c.line("Request rate configured (RPS):", fixed2(s.RequestRate))
	}
	c.float("Benchmark duration (s):", "duration")
	c.int("Total input tokens:", "total_input_tokens")
	if !s.Pooling {
		c.int("Total generated tokens:", "total_output_tokens")
	}
	c.float("Request throughput (req/s):", "request_throughput")
	if s.Goodput {
		c.float("Request goodput (req/s):", "request_goodput")
	}
	if !s.Pooling {
		c.float("Output token throughput (tok/s):", "output_throughput")
		c.float("Peak output token throughput (tok/s):", "max_output_tokens_per_s")
		c.float("Peak concurrent requests:", "max_concurrent_requests")
	}
	c.float("Total token throughput (tok/s):", "total_token_throughput")

	selected := s.PercentileMetrics
	if len(selected) == 0 {
		selected = []string{"ttft", "tpot", "itl"}
		if s.Pooling {
			selected = []string{"e2el"}
		}
	}
	percentiles := s.Percentiles
	if len(percentiles) == 0 {
		percentiles = []float64{99}
	}
	for _, sec := range latencySections {
		if !slices.Contains(selected, sec.key) || (s.Pooling && sec.key != "e2el") {
			continue
		}
		c.section(sec.header, '-')
		c.float("Mean "+sec.name+" (ms):", "mean_"+sec.key+"_ms")
		c.float("Median "+sec.name+" (ms):", "median_"+sec.key+"_ms")
		for _, p := range percentiles {
			word := PercentileWord(p)
			c.float("P"+word+" "+sec.name+" (ms):", "p"+word+"_"+sec.key+"_ms")
		}
	}
	c.sessions(percentiles)
	return c.rows, c.err
}

// sessions adds a session run's section after vLLM's (a single-turn run
// has no "sessions" value and prints vLLM's block alone).
func (c *consoleWriter) sessions(percentiles []float64) {
	if c.values == nil {
		return
	}
	if _, ok := c.values.Value(metrics.SessionCount); !ok {
		return
	}
	c.section("Sessions", '-')
	c.int("Sessions:", metrics.SessionCount)
	for _, m := range []struct{ key, name string }{
		{"ttft_first_turn", "TTFT first turn"}, {"ttft_later_turns", "TTFT later turns"}, {"session_duration", "session duration"},
	} {
		c.float("Mean "+m.name+" (ms):", "mean_"+m.key+"_ms")
		c.float("Median "+m.name+" (ms):", "median_"+m.key+"_ms")
		for _, p := range percentiles {
			word := PercentileWord(p)
			c.float("P"+word+" "+m.name+" (ms):", "p"+word+"_"+m.key+"_ms")
		}
	}
	if _, ok := c.values.Value(metrics.SessionGoodputRatio); ok {
		c.float("Session goodput ratio:", metrics.SessionGoodputRatio)
	}
	c.int("Tool rounds:", metrics.ToolRounds)
	c.int("Tool-cap hits:", metrics.ToolCapHits)
}

// centre centres a title in 50 characters as Python's "^" does (the odd
// padding character goes to the right).
func centre(title string, fill byte) string {
	pad := max(0, 50-len(title))
	left := pad / 2
	return strings.Repeat(string(fill), left) + title + strings.Repeat(string(fill), pad-left)
}

// PercentileWord spells a percentile as vLLM does in labels and result
// keys: 99 for 99.0, 99.9 for 99.9. It is metrics.PercentileWord, so the
// keys built with it are the ones metrics.Summary.Value parses.
func PercentileWord(p float64) string { return metrics.PercentileWord(p) }

// consoleWriter collects summary rows and keeps the first error.
type consoleWriter struct {
	values MetricValues
	rows   []summaryRow
	err    error
}

func (c *consoleWriter) line(label, value string) {
	c.rows = append(c.rows, summaryRow{Label: label, Value: value})
}

func (c *consoleWriter) section(title string, fill byte) {
	c.rows = append(c.rows, summaryRow{Section: title, Fill: fill})
}

func (c *consoleWriter) value(name string) float64 {
	if c.values == nil {
		c.fail(fmt.Errorf("write console summary: no values"))
		return math.NaN()
	}
	v, ok := c.values.Value(name)
	if !ok {
		c.fail(fmt.Errorf("write console summary: no metric %q", name))
		return math.NaN()
	}
	return v
}

func (c *consoleWriter) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func (c *consoleWriter) int(label, name string) {
	v := c.value(name)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.line(label, fixed2(v))
		return
	}
	c.line(label, strconv.FormatInt(int64(v), 10))
}

func (c *consoleWriter) float(label, name string) {
	c.line(label, fixed2(c.value(name)))
}

// fixed2 formats like Python's "{:.2f}", which spells infinities "inf".
func fixed2(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
