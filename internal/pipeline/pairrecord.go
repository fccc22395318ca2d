package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/servegate/servegate/benchtest/scenario"
)

// PairRecordVersion is the version of PairRecord's format. A reader
// refuses a record of another version: its writer is another servegate.
const PairRecordVersion = 1

// A PairRecord is what one paired run of a scenario leaves for the
// comparison that asked for it, beside the result files, as
// <scenario>.pair.json: the two result files to judge, or why there is
// no pair. A comparison reads it instead of the test's output.
type PairRecord struct {
	Version  int    `json:"version"`
	Scenario string `json:"scenario"`
	// Pair is the pair label (EnvPair); Mode the pair mode (EnvPairMode).
	Pair int    `json:"pair"`
	Mode string `json:"mode"`
	// Workload is head's scenario.Scenario.Workload; base's is equal
	// whenever the record has results.
	Workload string   `json:"workload,omitempty"`
	Base     PairSide `json:"base"`
	Head     PairSide `json:"head"`
	// TargetDiff lists how base's target differs from head's, one line
	// per key: "target.env.DELAY: 5ms (base: 0s)".
	TargetDiff []string `json:"target_diff,omitempty"`
	// Problem, when set, says why the scenario has no pair.
	Problem *PairProblem `json:"problem,omitempty"`
	// Checked says that the record comes from a check (EnvPairCheck):
	// the pair was set up but no target started.
	Checked bool `json:"checked,omitempty"`
	// Seconds is the wall time of the pair, target starts included.
	Seconds float64 `json:"seconds,omitempty"`
}

// A PairSide is one side's run of a pair.
type PairSide struct {
	// Result is the file name of the result JSON to judge, in the
	// record's directory; "" when the side did not run.
	Result string `json:"result,omitempty"`
	// Target is the target's kind, Image its image.
	Target string `json:"target,omitempty"`
	Image  string `json:"image,omitempty"`
	// Invalid says why the run is invalid (the load generator fell
	// behind in every attempt), "" for a valid run.
	Invalid string `json:"invalid,omitempty"`
	// Headroom is the largest share of a harness limit the run used:
	// 0.5 when its tightest health figure was half its limit. Past 1
	// the run is invalid.
	Headroom float64 `json:"headroom"`
}

// Headroom is PairSide.Headroom of an outcome.
func Headroom(o *Outcome) float64 {
	h := 0.0
	for _, v := range o.Health {
		switch {
		case !v.Found:
			// An unmeasured figure fails its limit (Harness.Check).
			h = math.Max(h, 1)
		case v.Bound.Value > 0:
			h = math.Max(h, v.Measured/v.Bound.Value)
		}
	}
	return h
}

// The kinds of PairProblem.
const (
	// ProblemNew: base has no such scenario; nothing to compare.
	ProblemNew = "new"
	// ProblemSkipped: the scenario does not pair, such as a capacity
	// search, whose steps differ between the sides.
	ProblemSkipped = "skipped"
	// ProblemIdentity: base's and head's workloads differ.
	ProblemIdentity = "identity"
	// ProblemScenario: a side's scenario cannot be loaded or run.
	ProblemScenario = "scenario"
	// ProblemStart: a side's target did not build or start.
	ProblemStart = "start"
	// ProblemRun: the pair did not run to its end.
	ProblemRun = "run"
)

// A PairProblem is why a scenario has no pair.
type PairProblem struct {
	// Kind is one of the Problem constants.
	Kind string `json:"kind"`
	// Side is base or head when the problem is one side's.
	Side string `json:"side,omitempty"`
	// Message says what went wrong, with the side's log tail.
	Message string `json:"message"`
}

// TargetDiff lists how base's target differs from head's, one line per
// key, paths taken relative to each side's root. A profile file whose
// content differs is listed although its path is the same.
func TargetDiff(base, head scenario.Target, baseRoot, headRoot string) []string {
	b := flatTarget(relPaths(base, baseRoot))
	h := flatTarget(relPaths(head, headRoot))
	var out []string
	for _, k := range unionKeys(b, h) {
		bv, hv := b[k], h[k]
		if bv == hv {
			continue
		}
		out = append(out, fmt.Sprintf("target.%s: %s (base: %s)", k, orNone(hv), orNone(bv)))
	}
	if scenario.IsProfileFile(head.Profile) && b["profile"] == h["profile"] && fileHash(base.Profile) != fileHash(head.Profile) {
		out = append(out, fmt.Sprintf("target.profile: the file %s differs", h["profile"]))
	}
	for i, hb := range head.Backends {
		if i < len(base.Backends) && scenario.IsProfileFile(hb.Profile) && fileHash(base.Backends[i].Profile) != fileHash(hb.Profile) {
			out = append(out, fmt.Sprintf("target.backends[%d].profile: the file %s differs", i, filepath.Base(hb.Profile)))
		}
	}
	return out
}

// relPaths returns t with its file paths relative to root.
func relPaths(t scenario.Target, root string) scenario.Target {
	rel := func(p string) string {
		if r, err := relTo(root, p); err == nil && filepath.IsAbs(p) {
			return filepath.ToSlash(r)
		}
		return p
	}
	if t.Build != nil {
		b := *t.Build
		b.Context = rel(b.Context)
		t.Build = &b
	}
	if scenario.IsProfileFile(t.Profile) {
		t.Profile = rel(t.Profile)
	}
	if strings.HasSuffix(t.Tokenizer, ".json") {
		t.Tokenizer = rel(t.Tokenizer)
	}
	t.Backends = slices.Clone(t.Backends)
	for i := range t.Backends {
		if scenario.IsProfileFile(t.Backends[i].Profile) {
			t.Backends[i].Profile = rel(t.Backends[i].Profile)
		}
	}
	t.StartTimeout = 0
	return t
}

// flatTarget maps each leaf of a target's YAML form to its value: a
// mapping's keys joined by dots, a list as one flow value.
func flatTarget(t scenario.Target) map[string]string {
	var n yaml.Node
	if err := n.Encode(t); err != nil {
		return map[string]string{"": err.Error()}
	}
	out := map[string]string{}
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if prefix != "" {
					k = prefix + "." + k
				}
				walk(k, n.Content[i+1])
			}
		case yaml.SequenceNode:
			if len(n.Content) == 0 {
				return
			}
			n.Style = yaml.FlowStyle
			enc, _ := yaml.Marshal(n)
			out[prefix] = strings.TrimSpace(string(enc))
		default:
			if n.Value != "" && n.Value != "0" && n.Tag != "!!null" {
				out[prefix] = n.Value
			}
		}
	}
	walk("", &n)
	return out
}

func unionKeys(a, b map[string]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// fileHash is the SHA-256 of a file's content, "" when it cannot be read.
func fileHash(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
