package gate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A Policy says which units the gate checks and how much each may get worse.
//
// The zero value gates nothing; use DefaultPolicy or LoadPolicy.
type Policy struct {
	// Alpha is the significance level of each Mann-Whitney U test: a
	// change is significant when p <= Alpha, as in benchstat. Zero
	// means 0.05.
	Alpha float64

	// Confidence is the level of the confidence intervals shown
	// around each median. Zero means 0.95. It never affects the verdict.
	Confidence float64

	// Holm applies the Holm–Bonferroni correction to the p-values of
	// the gated comparisons, so that Alpha bounds the chance that any
	// of them fails on noise (the family-wise error rate).
	Holm bool

	// Rules name the gated units, in order; the first rule whose Unit
	// matches a unit gates it.
	Rules []Rule
}

// A Rule gates one unit (or every unit matching a pattern).
type Rule struct {
	// Unit is a benchfmt unit ("ttft-p99-sec") or a path.Match pattern
	// ("ttft-*-sec").
	Unit string

	// Tolerance is how far the unit may move in its bad direction
	// before a significant change fails the gate.
	Tolerance Tolerance

	// Better overrides the unit's direction: +1 higher is better, -1
	// lower is better, 0 uses the inputs' "Unit X better=..." metadata
	// and then the built-in defaults (see Direction).
	Better int

	// Optional rules may match no unit in the inputs; a required rule
	// that matches nothing is an input error (exit 2).
	Optional bool
}

// A Tolerance is an allowed change in a unit's bad direction.
type Tolerance struct {
	// Amount is non-negative: a fraction of the base median when
	// Relative (0.05 for "5%"), else an absolute amount in the unit.
	Amount float64
	// Relative reports whether Amount is a fraction of the base median.
	Relative bool
	// Sign is the sign written in the policy: +1, -1, or 0 when none.
	// A written sign must agree with the unit's bad direction.
	Sign int
}

// String formats t as it is written in a policy, for example "+5%".
func (t Tolerance) String() string {
	s := ""
	switch t.Sign {
	case 1:
		s = "+"
	case -1:
		s = "-"
	}
	if t.Relative {
		return s + strconv.FormatFloat(t.Amount*100, 'f', -1, 64) + "%"
	}
	return s + strconv.FormatFloat(t.Amount, 'g', -1, 64)
}

// ParseTolerance parses a tolerance such as "+10%", "-5%", "5%" or
// "+0.01" (absolute, in the unit).
func ParseTolerance(s string) (Tolerance, error) {
	var t Tolerance
	str := strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(str, "+"):
		t.Sign, str = 1, str[1:]
	case strings.HasPrefix(str, "-"):
		t.Sign, str = -1, str[1:]
	}
	if rest, ok := strings.CutSuffix(str, "%"); ok {
		t.Relative, str = true, strings.TrimSpace(rest)
	}
	v, err := strconv.ParseFloat(str, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return Tolerance{}, fmt.Errorf("parse tolerance %q: want a non-negative amount such as +10%%, -5%% or +0.01", s)
	}
	if t.Relative {
		v /= 100
	}
	t.Amount = v
	return t, nil
}

// DefaultPolicy returns the policy used when none is given: failures,
// the median TTFT and TPOT, the tail of TTFT and goodput, the numbers a
// serving regression shows up in first.
//
//	fail-ratio:    +0 absolute: any significant rise fails (required)
//	ttft-p50-sec:  a 5% slower median TTFT is caught (optional only for
//	               benchfmt files that report the p99 alone; servegate's
//	               report it, and the paired verdict always judges it)
//	tpot-p50-sec:  a 5% slower median TPOT is caught (optional: a scenario
//	               of one-token answers has no TPOT)
//	ttft-p99-sec:  a 15% slower p99 TTFT is caught (required)
//	goodput-req/s: a 5% lower goodput is caught (optional: only scenarios with SLOs report it)
//	max-rate-req/s: 5% lower at most (optional: only capacity scenarios report it)
//	server-spec-accept-ratio, server-spec-accept-len-tokens: 5% lower at most
//	  (optional: only servers with speculative decoding report them)
//	ttft-later-p99-sec: 5% worse at most (optional: only session scenarios report it;
//	               the TTFT of later turns, which prefix reuse decides)
//
// fail-ratio comes first: a head whose requests fail more often is worse
// whatever its latencies say, and a run with no successful request
// reports no latency at all. Its tolerance is absolute (a share of the
// requests) because the base's ratio is usually 0, from which any
// relative change is infinite. The other tolerances are unsigned, so
// they follow the direction the inputs declare with "Unit X better=...".
//
// A tolerance is the regression to catch. In the paired verdict (the
// default path, FastJudge and Sequential) "ttft-p50-sec: 5%" means: a
// regression of 5% or more fails with probability at least 95% when the
// run can detect it (else the verdict says so, or, past twice the
// tolerance, cannot judge), and no change fails with probability at most
// 1% over the whole verdict. The medians are gated at 5% because they
// move with the engine; the p99's standard error is about three times
// the median's on the same requests, so it is gated at 15%, which its
// noise can resolve in the same pairs. The paired verdict judges a
// median as the median of the per-request ratios head/base (the typical
// request's change; BootstrapPair), which a change that scales every
// request moves exactly as much as the median. TPOT, not ITL: TPOT is one
// number per request, so base's and head's requests pair one to one.
// See the accuracy tests for the measured false-fail and catch rates.
// Speculative decoding is lossless, so a drop in its acceptance changes
// nothing but speed; its acceptance rate and mean acceptance length (from
// the server's counters, over the run) are gated so that the drop itself
// fails, and name the cause when latency regresses with it.
func DefaultPolicy() *Policy {
	return &Policy{
		Alpha:      0.05,
		Confidence: 0.95,
		Rules: []Rule{
			{Unit: "fail-ratio", Tolerance: Tolerance{Amount: 0, Sign: 1}},
			{Unit: "ttft-p50-sec", Tolerance: Tolerance{Amount: 0.05, Relative: true}, Optional: true},
			{Unit: "tpot-p50-sec", Tolerance: Tolerance{Amount: 0.05, Relative: true}, Optional: true},
			{Unit: "ttft-p99-sec", Tolerance: Tolerance{Amount: 0.15, Relative: true}},
			{Unit: "goodput-req/s", Tolerance: Tolerance{Amount: 0.05, Relative: true}, Optional: true},
			{Unit: "max-rate-req/s", Tolerance: Tolerance{Amount: 0.05, Relative: true}, Optional: true},
			{Unit: "ttfc-p99-sec", Tolerance: Tolerance{Amount: 0.05, Relative: true}, Optional: true},
			{Unit: "broken-tool-call-ratio", Tolerance: Tolerance{Amount: 0, Sign: 1}, Optional: true},
			{Unit: "server-spec-accept-ratio", Tolerance: Tolerance{Amount: 0.05, Relative: true}, Better: 1, Optional: true},
			{Unit: "server-spec-accept-len-tokens", Tolerance: Tolerance{Amount: 0.05, Relative: true}, Better: 1, Optional: true},
			{Unit: "ttft-later-p99-sec", Tolerance: Tolerance{Amount: 0.05, Relative: true}, Optional: true},
		},
	}
}

// DefaultPolicyYAML is DefaultPolicy written as a policy file.
const DefaultPolicyYAML = `# servegate gate policy (the built-in default; servegate gate -print-policy).
alpha: 0.05          # significance level of each Mann-Whitney U test, in (0, 1): significant when p <= alpha
confidence: 0.95     # level of the ± intervals shown, in (0, 1); never changes the verdict
holm: false          # Holm–Bonferroni correction across the gated comparisons
gates:               # unit (or path.Match pattern, e.g. ttft-*-sec): tolerance
  # A tolerance is the regression to catch: in the paired verdict a
  # regression of it or more fails with probability >= 95% where the run
  # can detect it, and no change fails with probability <= 1%.
  fail-ratio: +0     # absolute (a share of the requests): any significant rise fails
  ttft-p50-sec:      # median TTFT 5% slower (paired: the typical request's ratio); lower is better, so +5%
    tolerance: 5%
    optional: true   # for benchfmt files that report the p99 alone; the paired verdict always judges it
  tpot-p50-sec:      # median TPOT, (latency-TTFT)/(output tokens-1) as vLLM computes it
    tolerance: 5%
    optional: true   # a scenario of one-token answers has no TPOT
  ttft-p99-sec: 15%  # the tail: its noise is about 3x the median's, so a wider tolerance
  goodput-req/s:     # may get 5% worse; higher is better, so -5%
    tolerance: 5%
    optional: true   # reported only by scenarios that declare SLOs
    # better: higher # would override the inputs' "Unit goodput-req/s better=..." line
  max-rate-req/s:    # capacity (scenarios with a capacity: block) may drop 5%
    tolerance: 5%
    optional: true
  ttfc-p99-sec:      # time to first content token (runs with reasoning or tool calls) may get 5% worse
    tolerance: 5%
    optional: true
  broken-tool-call-ratio: # share of requests whose tool call broke: any significant rise fails
    tolerance: +0
    optional: true
  server-spec-accept-ratio:      # speculative decoding's acceptance rate may drop 5%
    tolerance: 5%
    better: higher
    optional: true               # reported only by servers with speculative decoding
  server-spec-accept-len-tokens: # its mean acceptance length (bonus token included) too
    tolerance: 5%
    better: higher
    optional: true
  ttft-later-p99-sec: # TTFT of later turns (session scenarios), which prefix reuse decides
    tolerance: 5%
    optional: true
`

// policyFile is the YAML form of a Policy.
type policyFile struct {
	Alpha      *float64  `yaml:"alpha"`
	Confidence *float64  `yaml:"confidence"`
	Holm       bool      `yaml:"holm"`
	Gates      yaml.Node `yaml:"gates"`
}

// ruleFile is the long YAML form of one gate.
type ruleFile struct {
	Tolerance string `yaml:"tolerance"`
	Better    string `yaml:"better"`
	Optional  bool   `yaml:"optional"`
}

// ParsePolicy parses a policy file. Gates map a unit (or path.Match
// pattern) to a tolerance, either directly ("ttft-p99-sec: +10%") or
// as a mapping with tolerance, better (lower|higher) and optional keys.
// Errors name the line and the key.
func ParsePolicy(data []byte) (*Policy, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("parse policy: the policy is empty: want at least a gates: mapping of unit to tolerance (servegate gate -print-policy prints the default)")
		}
		return nil, fmt.Errorf("parse policy: %w", err)
	}
	var f policyFile
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&f); err != nil {
		return nil, fmt.Errorf("parse policy: %w", err)
	}
	p := &Policy{Alpha: 0.05, Confidence: 0.95, Holm: f.Holm}
	var errs []error
	level := func(key string, v *float64, dst *float64, example string) {
		if v == nil {
			return
		}
		*dst = *v
		if !(*v > 0 && *v < 1) {
			errs = append(errs, fmt.Errorf("line %d: %s: %v is out of range: must be in (0, 1), such as %s", keyLine(&doc, key), key, *v, example))
		}
	}
	level("alpha", f.Alpha, &p.Alpha, "0.05")
	level("confidence", f.Confidence, &p.Confidence, "0.95")
	switch {
	case f.Gates.Kind == 0:
		errs = append(errs, errors.New("gates: missing: want a mapping of unit to tolerance, such as \"gates: {ttft-p99-sec: 5%}\" (servegate gate -print-policy prints the default)"))
	case f.Gates.Kind != yaml.MappingNode:
		errs = append(errs, fmt.Errorf("line %d: gates: want a mapping of unit to tolerance", f.Gates.Line))
	}
	for i := 0; f.Gates.Kind == yaml.MappingNode && i+1 < len(f.Gates.Content); i += 2 {
		k, v := f.Gates.Content[i], f.Gates.Content[i+1]
		r, err := parseRule(k.Value, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: gates: %s: %w", k.Line, k.Value, err))
			continue
		}
		p.Rules = append(p.Rules, r)
	}
	if len(errs) == 0 {
		if err := p.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("parse policy: %w", err)
	}
	return p, nil
}

// keyLine returns the line of a top-level key of a document, or 0.
func keyLine(doc *yaml.Node, key string) int {
	m := doc
	if m.Kind == yaml.DocumentNode && len(m.Content) == 1 {
		m = m.Content[0]
	}
	for i := 0; m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return 0
}

func parseRule(unit string, v *yaml.Node) (Rule, error) {
	r := Rule{Unit: unit}
	rf := ruleFile{Tolerance: v.Value}
	if v.Kind == yaml.MappingNode {
		rf = ruleFile{}
		if err := v.Decode(&rf); err != nil {
			return r, err
		}
	} else if v.Kind != yaml.ScalarNode {
		return r, errors.New("want a tolerance such as +10% or a mapping")
	}
	t, err := ParseTolerance(rf.Tolerance)
	if err != nil {
		return r, err
	}
	r.Tolerance, r.Optional = t, rf.Optional
	if rf.Better != "" {
		var ok bool
		if r.Better, ok = parseDirection(rf.Better); !ok {
			return r, fmt.Errorf("better: %q, want lower or higher", rf.Better)
		}
	}
	return r, nil
}

// LoadPolicy reads and parses a policy file.
func LoadPolicy(file string) (*Policy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load policy: %w", err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// Validate reports a policy that cannot be applied.
func (p *Policy) Validate() error {
	var errs []error
	if !(p.Alpha > 0 && p.Alpha < 1) {
		errs = append(errs, fmt.Errorf("alpha %v: must be in (0, 1)", p.Alpha))
	}
	if !(p.Confidence > 0 && p.Confidence < 1) {
		errs = append(errs, fmt.Errorf("confidence %v: must be in (0, 1)", p.Confidence))
	}
	if len(p.Rules) == 0 {
		errs = append(errs, errors.New("gates: no gated unit"))
	}
	for _, r := range p.Rules {
		if _, err := path.Match(r.Unit, ""); err != nil || r.Unit == "" || strings.ContainsAny(r.Unit, " \t") {
			errs = append(errs, fmt.Errorf("gates: bad unit or pattern %q", r.Unit))
		}
		if r.Tolerance.Amount < 0 {
			errs = append(errs, fmt.Errorf("gates: %s: negative tolerance", r.Unit))
		}
	}
	return errors.Join(errs...)
}

// rule returns the first rule gating unit.
func (p *Policy) rule(unit string) (Rule, bool) {
	for _, r := range p.Rules {
		if ok, _ := path.Match(r.Unit, unit); ok {
			return r, true
		}
	}
	return Rule{}, false
}

// unitList lists the policy's gated units.
func (p *Policy) unitList() string {
	units := make([]string, len(p.Rules))
	for i, r := range p.Rules {
		units[i] = r.Unit
	}
	return strings.Join(units, ", ")
}
