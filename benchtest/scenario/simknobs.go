package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// SimKnobs turns a simulator target's args ("--max_num_seqs=4",
// "slowdown=1.1") into simulator knob settings keyed by their YAML names.
func (t Target) SimKnobs() (map[string]string, error) {
	set := map[string]string{}
	for _, a := range t.Args {
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("simulator arg %q: want --knob=value", a)
		}
		set[strings.ReplaceAll(k, "-", "_")] = v
	}
	return set, nil
}

// vllmFlags maps the simulator knobs that vLLM has onto vllm serve flags.
var vllmFlags = map[string]func(v string) ([]string, error){
	"enable_prefix_caching": func(v string) ([]string, error) {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("want true or false, got %q", v)
		}
		if on {
			return []string{"--enable-prefix-caching"}, nil
		}
		return []string{"--no-enable-prefix-caching"}, nil
	},
	"max_num_seqs":           intFlag("--max-num-seqs"),
	"max_num_batched_tokens": intFlag("--max-num-batched-tokens"),
	"block_size":             intFlag("--block-size"),
	"max_model_len":          intFlag("--max-model-len"),
}

func intFlag(flag string) func(v string) ([]string, error) {
	return func(v string) ([]string, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("want a positive integer, got %q", v)
		}
		return []string{flag, strconv.Itoa(n)}, nil
	}
}

// VLLMKnobs lists the simulator knobs that map onto vllm serve flags, in
// the order the docs give them.
var VLLMKnobs = []string{"enable_prefix_caching", "max_num_seqs", "max_num_batched_tokens", "block_size", "max_model_len"}

// vllmArgs maps a simulator target's knobs onto vllm serve flags. A knob
// vLLM has no equivalent for is an *UnsupportedError.
func (t Target) vllmArgs(scenario string) ([]string, error) {
	var args []string
	for i, a := range t.Args {
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		k = strings.ReplaceAll(k, "-", "_")
		flag, known := vllmFlags[k]
		if !ok || !known {
			return nil, &UnsupportedError{Scenario: scenario, Kind: TargetVLLM, Reason: fmt.Sprintf(
				"target.args[%d] %s: the simulator knob %s has no vLLM equivalent (vLLM has %s)", i, a, k, strings.Join(VLLMKnobs, ", "))}
		}
		f, err := flag(v)
		if err != nil {
			return nil, fmt.Errorf("target.args[%d] %s: %w", i, a, err)
		}
		args = append(args, f...)
	}
	return args, nil
}

// An UnsupportedError says that a scenario cannot run on a target kind: a
// setting it relies on has no equivalent there, and dropping it would
// measure something else. benchtest's Run and Bench skip the scenario with
// this message; `servegate bench` reports it as an error.
type UnsupportedError struct {
	Scenario string // the scenario's name
	Kind     string // the target kind it cannot run on
	Reason   string // which setting, and why
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("scenario %s cannot run on the %s target: %s", e.Scenario, e.Kind, e.Reason)
}

// A SimKnobRange is the range of one simulator knob that a scenario file
// sets through target.args.
type SimKnobRange struct {
	// Key is the knob's name (its YAML key in the simulator).
	Key string
	// Int says the knob takes an integer; otherwise a number.
	Int bool
	// Min and Max bound the value, both included.
	Min, Max float64
}

// SimKnobRanges are the simulator knobs for what today's models stream and
// how conversations reuse the KV cache — tool calls, reasoning,
// speculative decoding, the KV offload tier — checked where the scenario
// file is loaded, so that a slip is one error naming the file, line and
// field before a container starts. The simulator checks these and all its
// other knobs again when it starts; the maxima are its own (see
// containers/simulator/README.md), and a test holds them equal.
var SimKnobRanges = []SimKnobRange{
	{Key: "tool_call_rate", Min: 0, Max: 1},
	{Key: "tool_call_arg_tokens", Int: true, Min: 0, Max: 65536},
	{Key: "reasoning_share", Min: 0, Max: 1},
	{Key: "spec_draft_tokens", Int: true, Min: 0, Max: 64},
	{Key: "spec_accept_prob", Min: 0, Max: 1},
	{Key: "kv_offload_blocks", Int: true, Min: 0, Max: 16777216},
	{Key: "kv_offload_load_us", Min: 0, Max: 1000000},
}

// validateSimArgs checks the knobs of SimKnobRanges among a simulator's
// args; field names the args (target.args, target.backends[i].args).
func (sc *Scenario) validateSimArgs(field string, args []string) error {
	for i, a := range args {
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || k == "" {
			return sc.errorf(fmt.Sprintf("%s[%d]", field, i), "simulator arg %q: want --knob=value", a)
		}
		k = strings.ReplaceAll(k, "-", "_")
		for _, r := range SimKnobRanges {
			if r.Key != k {
				continue
			}
			if err := r.check(strings.TrimSpace(v)); err != nil {
				return sc.errorf(fmt.Sprintf("%s[%d]", field, i), "%s: %v", k, err)
			}
		}
	}
	return nil
}

func (r SimKnobRange) check(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if r.Int {
		n, ierr := strconv.Atoi(v)
		f, err = float64(n), ierr
	}
	if err != nil {
		kind := "a number"
		if r.Int {
			kind = "an integer"
		}
		return fmt.Errorf("want %s, got %q", kind, v)
	}
	if !(f >= r.Min && f <= r.Max) {
		return fmt.Errorf("must be between %s and %s, got %s", fmtNum(r.Min), fmtNum(r.Max), v)
	}
	return nil
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
