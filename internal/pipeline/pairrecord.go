package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// per key: "target.env.DELAY: 5ms (base: 0s)". TargetChanges are
	// the same, as fields.
	TargetDiff    []string       `json:"target_diff,omitempty"`
	TargetChanges []TargetChange `json:"target_changes,omitempty"`
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
	// NotReset, when set, says why the server's prefix cache was not
	// emptied before the run: a server that offers no reset, or one
	// that refused it.
	NotReset string `json:"not_reset,omitempty"`
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

// NotReset is PairSide.NotReset of an outcome: "" when the run began on
// an empty prefix cache or tried no reset.
func NotReset(o *Outcome) string {
	if o.PrefixCache == nil || o.PrefixCache.Done {
		return ""
	}
	return o.PrefixCache.Note
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

// A TargetChange is one way head's target differs from base's.
type TargetChange struct {
	// Key is the target's key: "target.image", "target.env.DELAY".
	Key string `json:"key"`
	// Flag, for a change of target.args, is the flag whose value
	// differs: "--max-num-seqs". Its values are in Base and Head.
	Flag string `json:"flag,omitempty"`
	// Base and Head are the values: "" where a side has none, or a
	// flag without a value; FlagAbsent where a side lacks the flag.
	Base string `json:"base,omitempty"`
	Head string `json:"head,omitempty"`
	// Note replaces the values: "the file p.yaml differs".
	Note string `json:"note,omitempty"`
}

// FlagAbsent is TargetChange.Base or Head for a flag that side does not
// pass.
const FlagAbsent = "(absent)"

// HeadShown and BaseShown are a side's value as a report shows it: a
// flag with its value, "none" when the side has none.
func (c TargetChange) HeadShown() string { return c.shown(c.Head) }
func (c TargetChange) BaseShown() string { return c.shown(c.Base) }

func (c TargetChange) shown(v string) string {
	switch {
	case c.Flag == "":
		return orNone(v)
	case v == FlagAbsent:
		return "none"
	case v == "":
		return c.Flag
	}
	return c.Flag + " " + v
}

func (c TargetChange) String() string {
	if c.Note != "" {
		return c.Key + ": " + c.Note
	}
	return fmt.Sprintf("%s: %s (base: %s)", c.Key, c.HeadShown(), c.BaseShown())
}

// TargetDiff lists how base's target differs from head's, one line per
// key, paths taken relative to each side's root. A profile file whose
// content differs is listed although its path is the same.
func TargetDiff(base, head scenario.Target, baseRoot, headRoot string) []string {
	var out []string
	for _, c := range TargetChanges(base, head, baseRoot, headRoot) {
		out = append(out, c.String())
	}
	return out
}

// TargetChanges is TargetDiff as fields. Serve flags that differ are
// listed flag by flag (--max-num-seqs: 4, base 8) when both sides' args
// read as flags, each with its value.
func TargetChanges(base, head scenario.Target, baseRoot, headRoot string) []TargetChange {
	b := flatTarget(relPaths(base, baseRoot))
	h := flatTarget(relPaths(head, headRoot))
	var out []TargetChange
	for _, k := range unionKeys(b, h) {
		bv, hv := b[k], h[k]
		if bv == hv {
			continue
		}
		if k == "args" {
			if cs, ok := flagChanges("target.args", base.Args, head.Args); ok {
				out = append(out, cs...)
				continue
			}
		}
		out = append(out, TargetChange{Key: "target." + k, Base: bv, Head: hv})
	}
	if scenario.IsProfileFile(head.Profile) && b["profile"] == h["profile"] && fileHash(base.Profile) != fileHash(head.Profile) {
		out = append(out, TargetChange{Key: "target.profile", Note: fmt.Sprintf("the file %s differs", h["profile"])})
	}
	for i, hb := range head.Backends {
		if i < len(base.Backends) && scenario.IsProfileFile(hb.Profile) && fileHash(base.Backends[i].Profile) != fileHash(hb.Profile) {
			out = append(out, TargetChange{Key: fmt.Sprintf("target.backends[%d].profile", i), Note: fmt.Sprintf("the file %s differs", filepath.Base(hb.Profile))})
		}
	}
	return out
}

// flagChanges lists the flags whose values differ between two args
// lists, in head's order then base's. It returns false when either list
// has an argument that is neither a flag nor a flag's value.
func flagChanges(key string, base, head []string) ([]TargetChange, bool) {
	bf, ok1 := flags(base)
	hf, ok2 := flags(head)
	if !ok1 || !ok2 {
		return nil, false
	}
	var out []TargetChange
	seen := map[string]bool{}
	for _, f := range append(slices.Clip(hf), bf...) {
		if seen[f.name] {
			continue
		}
		seen[f.name] = true
		if bv, hv := lookupFlag(bf, f.name), lookupFlag(hf, f.name); bv != hv {
			out = append(out, TargetChange{Key: key, Flag: f.name, Base: bv, Head: hv})
		}
	}
	return mergeNegations(out), true
}

// mergeNegations joins a boolean flag's two spellings, --x on one side
// and --no-x on the other, into one change. vllm serve reads such pairs
// as one flag (argparse's BooleanOptionalAction). One line then says
// "--no-x (base: --x)" where two said "--no-x (base: none)" and "none
// (base: --x)".
func mergeNegations(cs []TargetChange) []TargetChange {
	var out []TargetChange
	used := make([]bool, len(cs))
	for i, c := range cs {
		if used[i] {
			continue
		}
		partner := ""
		if rest, ok := strings.CutPrefix(c.Flag, "--no-"); ok {
			partner = "--" + rest
		} else if rest, ok := strings.CutPrefix(c.Flag, "--"); ok {
			partner = "--no-" + rest
		}
		for j := i + 1; j < len(cs) && partner != ""; j++ {
			p := cs[j]
			if used[j] || p.Key != c.Key || p.Flag != partner {
				continue
			}
			switch {
			case c.Base == FlagAbsent && c.Head == "" && p.Base == "" && p.Head == FlagAbsent:
				c = TargetChange{Key: c.Key, Base: p.Flag, Head: c.Flag}
			case c.Base == "" && c.Head == FlagAbsent && p.Base == FlagAbsent && p.Head == "":
				c = TargetChange{Key: c.Key, Base: c.Flag, Head: p.Flag}
			default:
				continue
			}
			used[j] = true
			break
		}
		out = append(out, c)
	}
	return out
}

type flagValue struct{ name, value string }

// flags reads args as flags, each with the value that follows it (or
// its '=' part); false when an argument is neither.
func flags(args []string) ([]flagValue, bool) {
	var out []flagValue
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isFlag(a) || a == "-" || a == "--" {
			return nil, false
		}
		if name, v, ok := strings.Cut(a, "="); ok {
			out = append(out, flagValue{name, v})
			continue
		}
		f := flagValue{name: a}
		if i+1 < len(args) && !isFlag(args[i+1]) {
			f.value = args[i+1]
			i++
		}
		out = append(out, f)
	}
	return out, true
}

// isFlag says whether an argument is a flag rather than a value: it
// starts with '-' and is not a negative number.
func isFlag(a string) bool {
	if !strings.HasPrefix(a, "-") {
		return false
	}
	_, err := strconv.ParseFloat(a, 64)
	return err != nil
}

// lookupFlag is a flag's values, joined by a space when it repeats;
// FlagAbsent when the flag is not there.
func lookupFlag(fs []flagValue, name string) string {
	var vs []string
	found := false
	for _, f := range fs {
		if f.name == name {
			found = true
			if f.value != "" {
				vs = append(vs, f.value)
			}
		}
	}
	if !found {
		return FlagAbsent
	}
	return strings.Join(vs, " ")
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
