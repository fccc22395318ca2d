package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// An SLO is what a run must meet: vLLM's goodput definition and bounds on
// summary metrics.
type SLO struct {
	// Goodput is vLLM's --goodput: a request is good when each named
	// metric (ttft, tpot, e2el) is at most the value, in milliseconds.
	// It defines request_goodput and goodput_ratio; bound those to assert
	// it.
	Goodput map[string]float64 `yaml:"goodput"`
	// Bounds are checks on summary metrics by their result-JSON name,
	// written "p99_ttft_ms <= 800".
	Bounds []Bound `yaml:"bounds"`
}

// Comparison operators of a Bound.
var ops = []string{"<=", ">=", "==", "<", ">"}

// A Bound is one check of a summary metric, such as p99_ttft_ms <= 800.
type Bound struct {
	// Metric is the result-JSON name (p99_ttft_ms, failed,
	// output_throughput, request_goodput, goodput_ratio, ...).
	Metric string
	// Op is one of <=, <, >=, >, ==.
	Op string
	// Value is the bound, in the metric's unit.
	Value float64
}

// parseBound reads "metric op number".
func parseBound(s string) (Bound, error) {
	f := strings.Fields(s)
	if len(f) == 1 {
		// Allow "failed==0": split at the operator.
		for _, op := range ops {
			if i := strings.Index(s, op); i > 0 {
				f = []string{s[:i], op, s[i+len(op):]}
				break
			}
		}
	}
	if len(f) != 3 || !slices.Contains(ops, f[1]) {
		return Bound{}, fmt.Errorf("want \"<metric> <op> <number>\" with op one of %s, such as \"p99_ttft_ms <= 800\"; got %q", strings.Join(ops, " "), s)
	}
	v, err := strconv.ParseFloat(f[2], 64)
	if err != nil || math.IsNaN(v) {
		return Bound{}, fmt.Errorf("bound %q is not a number in %q", f[2], s)
	}
	return Bound{Metric: f[0], Op: f[1], Value: v}, nil
}

func (b *Bound) decodeNode(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return fmt.Errorf("want a bound such as \"p99_ttft_ms <= 800\", got %s", describe(n))
	}
	v, err := parseBound(n.Value)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// String writes the bound as a scenario file does.
func (b Bound) String() string {
	return b.Metric + " " + b.Op + " " + strconv.FormatFloat(b.Value, 'g', -1, 64)
}

// Holds reports whether measured meets the bound. NaN never does.
func (b Bound) Holds(measured float64) bool {
	switch b.Op {
	case "<=":
		return measured <= b.Value
	case "<":
		return measured < b.Value
	case ">=":
		return measured >= b.Value
	case ">":
		return measured > b.Value
	case "==":
		return measured == b.Value
	}
	return false
}

// A Verdict is the outcome of one bound on one run.
type Verdict struct {
	// Bound is the check.
	Bound Bound
	// Measured is the metric's value; meaningful when Found.
	Measured float64
	// Found is false when the summary has no such value (for example a
	// percentile that was not computed).
	Found bool
	// Pass is true when the value was found and meets the bound.
	Pass bool
	// Harness marks a limit on the load generator's health
	// (Harness.Check): failing it makes the run invalid instead of
	// failing the server.
	Harness bool
}

// Check evaluates every bound with lookup, which returns a metric's value
// by its result-JSON name. Every bound gets a verdict, in order.
func (s SLO) Check(lookup func(name string) (float64, bool)) []Verdict {
	out := make([]Verdict, 0, len(s.Bounds))
	for _, b := range s.Bounds {
		v, ok := lookup(b.Metric)
		out = append(out, Verdict{Bound: b, Measured: v, Found: ok, Pass: ok && b.Holds(v)})
	}
	return out
}

// percentileOf splits a percentile metric name "p99.9_ttft_ms" into its
// percentile and base metric; ok is false for other names.
func percentileOf(name string) (p float64, metric string, ok bool) {
	if !strings.HasPrefix(name, "p") || !strings.HasSuffix(name, "_ms") {
		return 0, "", false
	}
	rest := strings.TrimSuffix(name[1:], "_ms")
	i := strings.IndexByte(rest, '_')
	if i <= 0 {
		return 0, "", false
	}
	p, err := strconv.ParseFloat(rest[:i], 64)
	if err != nil {
		return 0, "", false
	}
	return p, rest[i+1:], true
}

// Margin is how far the measured value sits inside the bound, relative to
// the bound: (Value − Measured) / |Value| for < and <=, the opposite for >
// and >=; positive when the bound holds, negative when it does not. A
// bound without a scale (== or a bound of 0) has no relative margin:
// Margin is +Inf when it holds and NaN when it does not, as it is for a
// value not found.
func (v Verdict) Margin() float64 {
	b := v.Bound
	if !v.Found {
		return math.NaN()
	}
	if b.Op == "==" || b.Value == 0 {
		if v.Pass {
			return math.Inf(1)
		}
		return math.NaN()
	}
	m := (b.Value - v.Measured) / math.Abs(b.Value)
	if b.Op == ">=" || b.Op == ">" {
		m = -m
	}
	return m
}
