package main

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/servegate/servegate/benchtest/metrics"
	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/simulator/sim"
)

// A scenario file runs through the same pipeline as the flags: its keys
// become vllm bench serve flags, placed before the command line's own so
// that a flag given explicitly wins (argparse keeps the last value). Keys
// no flag expresses (trace replay, simulator profile and knobs, container
// image and args, SLO bounds) travel beside the flags in the benchRun.

// scenarioFlag returns the --scenario value of a command line (spelled in
// any way the parser accepts: --scenario=F, an unambiguous prefix, ...).
func scenarioFlag(args []string) (string, bool) {
	p := newBenchParser(&benchArgs{})
	for i, a := range args {
		if a == "--" {
			return "", false
		}
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, val, inline := strings.Cut(a[2:], "=")
		if o, err := p.lookup(strings.ReplaceAll(name, "_", "-")); err != nil || o == nil || o.name != "scenario" {
			continue
		}
		if inline {
			return val, true
		}
		if i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// loadScenarios reads a scenario file and applies the environment
// overrides CI uses (SERVEGATE_TARGET, SERVEGATE_URL, SERVEGATE_MODEL, ...).
func loadScenarios(path string) ([]*scenario.Scenario, error) {
	scs, err := scenario.LoadFile(path)
	if err != nil {
		return nil, err
	}
	env := scenario.EnvFromOS()
	for i, sc := range scs {
		if scs[i], err = sc.Override(env); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	return scs, nil
}

// scenarioArgs spells a scenario as bench flags.
func scenarioArgs(sc *scenario.Scenario) ([]string, error) {
	var args []string
	add := func(flag string, vals ...string) { args = append(args, append([]string{flag}, vals...)...) }
	num := metrics.PyFloat
	t := sc.Target

	add("--label", sc.Name)
	add("--target", t.Kind)
	if t.Kind == scenario.TargetURL {
		add("--base-url", strings.TrimRight(t.URL, "/"))
	}
	model := t.Model
	if model == "" && (t.Kind == scenario.TargetSim || t.Kind == scenario.TargetInproc) {
		model = sim.DefaultParams().Model
	}
	if model != "" {
		add("--model", model)
	}
	if t.ServedModelName != "" {
		add("--served-model-name", t.ServedModelName)
	}
	add("--tokenizer", scenario.ResolveTokenizer(t.Tokenizer, model))
	add("--backend", sc.Backend)
	if sc.Endpoint != "" {
		add("--endpoint", sc.Endpoint)
	}

	d := sc.Dataset
	add("--dataset-name", d.Name)
	if d.Path != "" {
		add("--dataset-path", d.Path)
	}
	add("--num-prompts", strconv.Itoa(d.NumPrompts), "--seed", strconv.FormatInt(d.Seed, 10))
	switch d.Name {
	case "random", "random-rerank":
		add("--random-input-len", strconv.Itoa(d.InputLen), "--random-prefix-len", strconv.Itoa(d.PrefixLen),
			"--random-range-ratio", num(d.RangeRatio))
		if d.OutputLen > 0 {
			add("--random-output-len", strconv.Itoa(d.OutputLen))
		}
	case "sharegpt":
		if d.OutputLen > 0 {
			add("--sharegpt-output-len", strconv.Itoa(d.OutputLen))
		}
	case "custom":
		add("--custom-output-len", strconv.Itoa(d.OutputLen))
	case "spec_bench":
		add("--spec-bench-output-len", strconv.Itoa(d.OutputLen))
	case "sonnet":
		add("--sonnet-input-len", strconv.Itoa(d.InputLen), "--sonnet-output-len", strconv.Itoa(d.OutputLen),
			"--sonnet-prefix-len", strconv.Itoa(d.PrefixLen))
	case "prefix_repetition":
		add("--prefix-repetition-prefix-len", strconv.Itoa(d.PrefixLen), "--prefix-repetition-suffix-len", strconv.Itoa(d.SuffixLen),
			"--prefix-repetition-num-prefixes", strconv.Itoa(d.NumPrefixes), "--prefix-repetition-output-len", strconv.Itoa(d.OutputLen))
	}
	for flag, on := range map[string]bool{"--skip-chat-template": d.SkipChatTemplate, "--no-oversample": d.NoOversample, "--disable-shuffle": d.DisableShuffle} {
		if on {
			add(flag)
		}
	}

	l := sc.Load
	if r := l.RampUp; r != nil {
		add("--ramp-up-strategy", r.Strategy, "--ramp-up-start-rps", strconv.Itoa(int(r.StartRPS)),
			"--ramp-up-end-rps", strconv.Itoa(int(r.EndRPS)))
	} else {
		add("--request-rate", num(l.RequestRate))
	}
	add("--burstiness", num(l.Burstiness))
	if l.MaxConcurrency > 0 {
		add("--max-concurrency", strconv.Itoa(l.MaxConcurrency))
	}
	add("--num-warmups", strconv.Itoa(l.Warmups))
	if l.MaxDuration > 0 {
		add("--max-duration-sec", num(l.MaxDuration.D().Seconds()))
	}
	if l.RequestTimeout > 0 {
		add("--request-timeout-sec", num(l.RequestTimeout.D().Seconds()))
	}
	if l.ReadyTimeout != nil {
		add("--ready-check-timeout-sec", strconv.Itoa(int(math.Ceil(l.ReadyTimeout.D().Seconds()))))
	}

	s := sc.Sampling
	for flag, v := range map[string]*float64{"--temperature": s.Temperature, "--top-p": s.TopP, "--min-p": s.MinP,
		"--frequency-penalty": s.FrequencyPenalty, "--presence-penalty": s.PresencePenalty, "--repetition-penalty": s.RepetitionPenalty} {
		if v != nil {
			add(flag, num(*v))
		}
	}
	if s.TopK != nil {
		add("--top-k", strconv.Itoa(*s.TopK))
	}
	if s.IgnoreEOS {
		add("--ignore-eos")
	}
	if len(sc.ExtraBody) > 0 {
		body, err := json.Marshal(sc.ExtraBody)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: extra_body: %w", sc.Name, err)
		}
		add("--extra-body", string(body))
	}
	if len(sc.Headers) > 0 {
		var hs []string
		for k, v := range sc.Headers {
			hs = append(hs, k+"="+v)
		}
		sort.Strings(hs)
		add("--header", hs...)
	}
	if m := sc.Metrics.PercentileMetrics; len(m) > 0 {
		add("--percentile-metrics", strings.Join(m, ","))
	}
	if ps := sc.Metrics.Percentiles; len(ps) > 0 {
		words := make([]string, len(ps))
		for i, p := range ps {
			words[i] = strconv.FormatFloat(p, 'g', -1, 64)
		}
		add("--metric-percentiles", strings.Join(words, ","))
	}
	if len(sc.SLO.Goodput) > 0 {
		var gs []string
		for _, k := range []string{"ttft", "tpot", "e2el"} {
			if v, ok := sc.SLO.Goodput[k]; ok {
				gs = append(gs, k+":"+strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		add("--goodput", gs...)
	}
	return args, nil
}
