package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/servermetrics"
	"github.com/servegate/servegate/internal/tokenizer"
)

// The flags → Plan mapping. Without --scenario every flag applies, with
// its default when not given, so a plain run is vllm bench serve's. With
// --scenario the Plan is pipeline.NewPlan's and only the flags given
// explicitly apply on top of it.

// flagsPlan maps the validated flags of a plain run onto a Plan.
func flagsPlan(a *benchArgs, fp *benchPlan, log io.Writer) *pipeline.Plan {
	plan := &pipeline.Plan{
		Target: scenario.Target{Kind: a.Target, Model: a.Model},
		Hub:    cliHub(),
		Info:   metrics.RunInfo{ModelID: a.Model},
		// No scrapes unless asked: a plain run is vllm bench serve's.
		ServerMetrics: servermetrics.Options{Off: true},
	}
	if a.Target == scenario.TargetURL {
		plan.Target.URL = fp.BaseURL
	}
	applyFlags(plan, a, fp, func(string) bool { return true })
	if a.Tokenizer == nil {
		plan.Tokenizer, plan.Info.TokenizerID = a.Model, a.Model
		if a.Target == scenario.TargetInproc || a.Target == scenario.TargetSim {
			plan.Tokenizer = scenario.ResolveTokenizer("", a.Model)
			plan.Target.Tokenizer = plan.Tokenizer
			if plan.Tokenizer == tokenizer.Llama3 {
				fmt.Fprintf(log, "tokenizer: %s is not in the Hugging Face cache, so the %s target uses the bundled Llama-3 tokenizer (--tokenizer chooses another)\n", a.Model, a.Target)
			}
		}
	}
	return plan
}

// scenarioPlan plans a scenario with the flags given explicitly applied
// on top. --target, --base-url (or --host/--port) and --model change the
// scenario's target the way SERVEGATE_TARGET, SERVEGATE_URL and
// SERVEGATE_MODEL do, so that kind-specific keys are kept or dropped by the
// same rule.
func scenarioPlan(sc *scenario.Scenario, a *benchArgs, fp *benchPlan, p *argParser) (*pipeline.Plan, error) {
	var env scenario.Env
	if p.given("target") {
		env.Target = a.Target
	}
	if p.given("base-url") || p.given("host") || p.given("port") {
		env.URL = fp.BaseURL
	}
	if p.given("model") {
		env.Model = a.Model
	}
	over, err := sc.Override(env)
	if err != nil {
		return nil, overrideError(sc.Name, err)
	}
	if over.Sessions != nil {
		if err := sessionFlags(over.Name, p); err != nil {
			return nil, err
		}
	}
	plan := pipeline.NewPlan(over)
	applyFlags(plan, a, fp, p.given)
	return plan, nil
}

// cliHub allows downloading a model id's tokenizer unless HF_HUB_OFFLINE
// is set, as vLLM does.
func cliHub() tokenizer.Hub {
	offline := os.Getenv("HF_HUB_OFFLINE")
	return tokenizer.Hub{Download: offline == "" || offline == "0" || strings.EqualFold(offline, "false")}
}

// applyFlags writes the flags for which given is true into plan.
func applyFlags(plan *pipeline.Plan, a *benchArgs, fp *benchPlan, given func(string) bool) {
	d, e, info := &plan.Dataset, &plan.Engine, &plan.Info
	set := func(flag string, apply func()) {
		if given(flag) {
			apply()
		}
	}
	// setOpt applies an optional string flag that has a value.
	setOpt := func(flag string, v *string, dst *string) {
		if given(flag) && v != nil {
			*dst = *v
		}
	}
	// Target and tokenizer.
	setOpt("served-model-name", a.ServedModelName, &plan.Target.ServedModelName)
	set("tokenizer", func() {
		if a.Tokenizer != nil {
			plan.Tokenizer, info.TokenizerID, plan.Hub = *a.Tokenizer, *a.Tokenizer, cliHub()
			plan.Target.Tokenizer = plan.Tokenizer // an inproc simulator counts with it too
		}
	})
	// Dataset.
	set("dataset-name", func() { d.Name = a.DatasetName })
	setOpt("dataset-path", a.DatasetPath, &d.Path)
	set("num-prompts", func() {
		d.NumPrompts, info.NumPrompts = a.NumPrompts, a.NumPrompts
		if a.NumPrompts <= 0 {
			d.NumPrompts = -1 // every row, as vLLM's num_prompts <= 0 for custom
		}
	})
	set("seed", func() { d.Seed, e.Seed = int64(a.Seed), int64(a.Seed) })
	set("no-oversample", func() { d.NoOversample = a.NoOversample })
	set("disable-shuffle", func() { d.DisableShuffle = a.DisableShuffle })
	set("skip-chat-template", func() { d.SkipChatTemplate = a.SkipChatTemplate })
	set("random-input-len", func() { d.Random.InputLen = a.RandomInputLen })
	set("random-output-len", func() { d.Random.OutputLen = a.RandomOutputLen })
	set("random-range-ratio", func() { d.Random.RangeRatio = a.RandomRangeRatio })
	set("random-prefix-len", func() { d.Random.PrefixLen = a.RandomPrefixLen })
	set("random-batch-size", func() { d.Random.BatchSize = a.RandomBatchSize })
	set("no-reranker", func() { d.Random.NoReranker = a.NoReranker })
	set("sharegpt-output-len", func() {
		if a.SharegptOutputLen != nil {
			d.ShareGPT.OutputLen = *a.SharegptOutputLen
		}
	})
	set("custom-output-len", func() { d.Custom.OutputLen = a.CustomOutputLen })
	set("spec-bench-output-len", func() { d.SpecBench.OutputLen = a.SpecBenchOutputLen })
	setOpt("spec-bench-category", a.SpecBenchCategory, &d.SpecBench.Category)
	set("sonnet-input-len", func() { d.Sonnet.InputLen = a.SonnetInputLen })
	set("sonnet-output-len", func() { d.Sonnet.OutputLen = a.SonnetOutputLen })
	set("sonnet-prefix-len", func() { d.Sonnet.PrefixLen = a.SonnetPrefixLen })
	set("txt-slices-input-len", func() { d.TxtSlices.InputLen = a.TxtSlicesInputLen })
	set("txt-slices-output-len", func() { d.TxtSlices.OutputLen = a.TxtSlicesOutputLen })
	set("prefix-repetition-prefix-len", func() { d.PrefixRepetition.PrefixLen = a.PrefixRepetitionPrefixLen })
	set("prefix-repetition-suffix-len", func() { d.PrefixRepetition.SuffixLen = a.PrefixRepetitionSuffixLen })
	set("prefix-repetition-num-prefixes", func() { d.PrefixRepetition.NumPrefixes = a.PrefixRepetitionNumPrefix })
	set("prefix-repetition-output-len", func() { d.PrefixRepetition.OutputLen = a.PrefixRepetitionOutputLen })
	// Requests.
	set("backend", func() {
		d.Backend, e.Backend, info.Backend = a.Backend, a.Backend, a.Backend
		plan.Summary.Pooling = fp.Pooling
	})
	set("endpoint", func() { e.Endpoint = a.Endpoint })
	set("header", func() { e.Headers = fp.Headers })
	set("logprobs", func() { e.Logprobs = a.Logprobs })
	set("lora-modules", func() { e.LoRAModules = a.LoRAModules })
	set("request-id-prefix", func() { d.RequestIDPrefix, e.RequestIDPrefix = a.RequestIDPrefix, a.RequestIDPrefix })
	set("extra-body", func() { e.ExtraBody = a.ExtraBody })
	set("ignore-eos", func() { e.IgnoreEOS = a.IgnoreEOS })
	set("profile", func() { e.Profile = a.Profile })
	s := &e.Sampling
	set("temperature", func() { s.Temperature = a.Temperature })
	set("top-p", func() { s.TopP = a.TopP })
	set("top-k", func() { s.TopK = a.TopK })
	set("min-p", func() { s.MinP = a.MinP })
	set("frequency-penalty", func() { s.FrequencyPenalty = a.FrequencyPenalty })
	set("presence-penalty", func() { s.PresencePenalty = a.PresencePenalty })
	set("repetition-penalty", func() { s.RepetitionPenalty = a.RepetitionPenalty })
	// Load.
	set("request-rate", func() {
		e.RequestRate, e.RampUp = a.RequestRate, nil
	})
	set("burstiness", func() { e.Burstiness = a.Burstiness })
	set("max-concurrency", func() {
		e.MaxConcurrency = 0
		if a.MaxConcurrency != nil {
			e.MaxConcurrency = *a.MaxConcurrency
		}
	})
	set("num-warmups", func() { e.NumWarmups = a.NumWarmups })
	set("max-line-bytes", func() { e.MaxLineBytes = a.MaxLineBytes })
	set("warm-connections", func() {
		e.WarmConnections = 0
		if a.WarmConnections {
			e.WarmConnections = engine.WarmAuto
		}
	})
	set("ready-check-timeout-sec", func() { e.ReadyTimeout = time.Duration(a.ReadyCheckTimeoutSec) * time.Second })
	set("request-timeout-sec", func() { e.RequestTimeout = time.Duration(a.RequestTimeoutSec * float64(time.Second)) })
	set("server-metrics-interval-sec", func() {
		plan.ServerMetrics.Interval = time.Duration(a.ServerMetricsIntervalSec * float64(time.Second))
		plan.ServerMetrics.Off = a.ServerMetricsIntervalSec == 0
	})
	set("max-duration-sec", func() { e.MaxDuration = time.Duration(a.MaxDurationSec * float64(time.Second)) })
	set("shard", func() { e.Shard, info.Extras = fp.Shard, info.Extras || fp.Shard.Enabled() })
	set("start-at", func() { e.StartAt = fp.StartAt })
	if given("ramp-up-strategy") || given("ramp-up-start-rps") || given("ramp-up-end-rps") {
		applyRampUp(plan, a)
	}
	// Summary and result header.
	set("percentile-metrics", func() { plan.Summary.PercentileMetrics = fp.PercentileMetrics })
	set("metric-percentiles", func() { plan.Summary.Percentiles = fp.Percentiles })
	set("goodput", func() { plan.Summary.Goodput, plan.SLO.Goodput = fp.Goodput, fp.Goodput })
	setOpt("label", a.Label, &info.Label)
	set("metadata", func() {
		for _, kv := range fp.Metadata {
			info.Metadata = append(info.Metadata, [2]string{kv.Key, kv.Value})
		}
	})
	if given("dataset-name") || given("backend") || given("ignore-eos") {
		e.IgnoreEOS = e.IgnoreEOS || dataset.ForcesIgnoreEOS(d.Name, e.Backend)
	}
	if plan.Summary.Pooling && !given("percentile-metrics") && given("backend") {
		plan.Summary.PercentileMetrics = fp.PercentileMetrics
	}
}

// applyRampUp sets the ramp-up from its flags, keeping the scenario's
// values for the ones not given.
func applyRampUp(plan *pipeline.Plan, a *benchArgs) {
	r := engine.RampUp{}
	if plan.Engine.RampUp != nil {
		r = *plan.Engine.RampUp
	}
	if a.RampUpStrategy != nil {
		r.Strategy = *a.RampUpStrategy
	}
	if a.RampUpStartRPS != nil {
		r.StartRPS = float64(*a.RampUpStartRPS)
	}
	if a.RampUpEndRPS != nil {
		r.EndRPS = float64(*a.RampUpEndRPS)
	}
	if r.Strategy == "" {
		return // vLLM ignores the rates without a strategy
	}
	plan.Engine.RampUp = &r
	plan.Engine.RequestRate = inf
}

// overrideError names the scenario in an override's error, unless the
// error already starts with it.
func overrideError(name string, err error) error {
	if strings.HasPrefix(err.Error(), "scenario "+name+" ") {
		return err
	}
	return fmt.Errorf("scenario %s: %w", name, err)
}

// notForSessions are the flags (or flag prefixes, ending in "-") that set
// requests or their arrival, which a session scenario takes from its
// sessions block instead.
var notForSessions = []string{
	"dataset-", "num-prompts", "random-", "sonnet-", "sharegpt-", "custom-", "spec-bench-", "txt-slices-",
	"prefix-repetition-", "hf-", "no-oversample", "disable-shuffle", "skip-chat-template", "no-reranker",
	"request-rate", "burstiness", "max-concurrency", "num-warmups", "ramp-up-", "lora-modules", "shard", "seed",
	"blazedit-", "common-prefix-len",
}

// sessionFlags refuses, for a session scenario, the flags given that it
// would not use: a flag that changed nothing would be a silent lie.
func sessionFlags(name string, p *argParser) error {
	for _, o := range p.options {
		if !o.seen {
			continue
		}
		for _, f := range notForSessions {
			if o.name == f || (strings.HasSuffix(f, "-") && strings.HasPrefix(o.name, f)) {
				return fmt.Errorf("scenario %s is a session scenario: --%s does not apply (its sessions block sets the conversations, their arrival, max_active, warmups and seed)", name, o.name)
			}
		}
	}
	return nil
}
