package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/servegate/servegate/benchtest/client"
	"github.com/servegate/servegate/benchtest/dataset"
	"github.com/servegate/servegate/benchtest/engine"
	"github.com/servegate/servegate/benchtest/metrics"
	"github.com/servegate/servegate/benchtest/report"
	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/tokenizer"
)

// A benchRun is one execution of servegate bench: the validated flags and
// where its output goes.
type benchRun struct {
	args   *benchArgs
	plan   *benchPlan
	parser *argParser
	stdout io.Writer
	stderr io.Writer
	// scenario is the scenario the flags came from; nil without --scenario.
	scenario *scenario.Scenario
	// now is the clock of the result's date; time.Now when nil.
	now func() time.Time
}

// execute runs the benchmark end to end: tokenizer and dataset, target,
// engine, then the summary, console block, result files and HTML report.
func (r *benchRun) execute(ctx context.Context) error {
	tok, err := loadTokenizer(ctx, r.plan.TokenizerID)
	if err != nil {
		return err
	}
	defer tok.Close()
	spec := datasetSpec(r.args)
	if sc := r.scenario; sc != nil {
		spec.TraceReplay, spec.TraceSpeed = sc.Load.TraceReplay, sc.Load.TraceSpeed
	}
	samples, err := dataset.Load(ctx, spec, tok)
	if err != nil {
		return err
	}
	tgt, err := r.startTarget(ctx, tok)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := tgt.Close(sctx); err != nil {
			fmt.Fprintf(r.stderr, "stop %s target: %v\n", tgt.Kind, err)
		}
	}()
	res, err := r.drive(ctx, tgt, tok, samples)
	if err != nil {
		return err
	}
	return r.output(tgt, res)
}

// startTarget starts (or names) the server the run talks to.
func (r *benchRun) startTarget(ctx context.Context, tok *tokenizer.Tokenizer) (*benchTarget, error) {
	a := r.args
	served := a.Model
	if a.ServedModelName != nil {
		served = *a.ServedModelName
	}
	so, err := r.targetOptions()
	if err != nil {
		return nil, err
	}
	tgt, err := startTarget(ctx, a.Target, r.plan.BaseURL, a.Model, served, tok, so, r.stderr)
	if err != nil {
		return nil, err
	}
	if tgt.Kind != "url" {
		fmt.Fprintf(r.stdout, "Started %s target at %s\n", tgt.Kind, tgt.BaseURL)
	}
	return tgt, nil
}

// drive runs the engine over the samples, with the progress bar.
func (r *benchRun) drive(ctx context.Context, tgt *benchTarget, tok *tokenizer.Tokenizer, samples []dataset.Sample) (*engine.Result, error) {
	a := r.args
	cfg := engineConfig(a, r.plan, tgt.BaseURL, tok)
	if sc := r.scenario; sc != nil {
		cfg.TraceArrivals, cfg.TraceSpeed = sc.Load.TraceReplay, sc.Load.TraceSpeed
	}
	r.printTraffic()
	var bar *report.ProgressBar
	if !a.DisableTqdm && (a.Progress || report.IsTerminal(r.stderr)) {
		bar = report.NewProgressBar(r.stderr, len(samples))
		bar.Plain = !report.IsTerminal(r.stderr)
		cfg.Progress = bar.Update
	}
	res, err := engine.Run(ctx, cfg, samples)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(r.stderr, "warning: %v\n", w)
	}
	if res.Stopped != nil {
		fmt.Fprintf(r.stderr, "warning: run stopped early: %v\n", res.Stopped)
	}
	return res, nil
}

// output summarises the run and writes everything asked for: plots,
// the console block, result files, the HTML report and SLO verdicts.
func (r *benchRun) output(tgt *benchTarget, res *engine.Result) error {
	a, plan := r.args, r.plan
	sum := metrics.Summarize(res.Records, res.Duration, metrics.Options{
		PercentileMetrics: plan.PercentileMetrics,
		Percentiles:       plan.Percentiles,
		Goodput:           plan.Goodput,
		Pooling:           plan.Pooling,
	})
	if sum.Completed == 0 {
		fmt.Fprintln(r.stderr, "warning: All requests failed. This is likely due to a misconfiguration on the benchmark arguments.")
	}
	if !a.NoPlot && !plan.Pooling {
		if err := report.WriteThroughputPlots(r.stdout, res.Records); err != nil {
			return err
		}
	}
	console := r.consoleSummary(sum)
	if err := report.WriteConsoleSummary(r.stdout, console); err != nil {
		return err
	}
	info := r.runInfo(res)
	if a.SaveResult || a.AppendResult {
		if err := r.saveResult(sum, info); err != nil {
			return err
		}
	}
	var verdicts []scenario.Verdict
	if sc := r.scenario; sc != nil && len(sc.SLO.Bounds) > 0 {
		verdicts = sc.SLO.Check(scenario.WithDerived(sum.Value))
	}
	if a.Report != nil {
		if err := r.writeHTMLReport(*a.Report, tgt, res, console, info, verdicts); err != nil {
			return err
		}
		fmt.Fprintf(r.stdout, "HTML report: %s\n", *a.Report)
	}
	return r.checkSLOs(verdicts)
}

// checkSLOs prints the scenario's SLO table and fails when a bound broke.
func (r *benchRun) checkSLOs(verdicts []scenario.Verdict) error {
	sc := r.scenario
	if len(verdicts) == 0 {
		return nil
	}
	fmt.Fprintf(r.stdout, "SLOs of scenario %s:\n", sc.Name)
	if err := report.WriteSLOTable(r.stdout, verdicts); err != nil {
		return err
	}
	if msg := report.SLOFailure(verdicts); msg != "" {
		return fmt.Errorf("scenario %s: SLO not met: %s", sc.Name, msg)
	}
	return nil
}

// targetOptions takes what a scenario says about its target beyond the
// flags, when the target kind is still the scenario's (or another
// simulator kind, which takes the same profiles and knobs).
func (r *benchRun) targetOptions() (targetOptions, error) {
	var so targetOptions
	sc := r.scenario
	if sc == nil {
		return so, nil
	}
	switch kind := r.args.Target; {
	case isSimulatorKind(sc.Target.Kind) && isSimulatorKind(kind):
		so.Profile = sc.Target.Profile
		knobs, err := sc.Target.SimKnobs()
		if err != nil {
			return so, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		so.Knobs = knobs
	case sc.Target.Kind == "vllm" && kind == "vllm":
		so.Image, so.VLLMArgs, so.VLLMEnv = sc.Target.Image, sc.Target.Args, sc.Target.Env
	}
	return so, nil
}

// isSimulatorKind reports whether a target kind runs servegate's simulator
// (which takes a scenario's profile and knobs).
func isSimulatorKind(kind string) bool { return kind == "sim" || kind == "inproc" }

// loadTokenizer loads --tokenizer (or --model): a tokenizer.json, a
// directory holding one, or a model id in the Hugging Face cache,
// downloaded when missing unless HF_HUB_OFFLINE is set, as vLLM does.
func loadTokenizer(ctx context.Context, id string) (*tokenizer.Tokenizer, error) {
	offline := os.Getenv("HF_HUB_OFFLINE")
	hub := tokenizer.Hub{Download: offline == "" || offline == "0" || strings.EqualFold(offline, "false")}
	tok, err := tokenizer.Load(ctx, id, hub)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", id, err)
	}
	return tok, nil
}

// datasetSpec maps the dataset flags onto dataset.Spec.
func datasetSpec(a *benchArgs) dataset.Spec {
	s := dataset.Spec{
		Name:             a.DatasetName,
		NumPrompts:       a.NumPrompts,
		Seed:             int64(a.Seed),
		Backend:          a.Backend,
		RequestIDPrefix:  a.RequestIDPrefix,
		NoOversample:     a.NoOversample,
		DisableShuffle:   a.DisableShuffle,
		SkipChatTemplate: a.SkipChatTemplate,
		Random: dataset.RandomParams{
			InputLen: a.RandomInputLen, OutputLen: a.RandomOutputLen, RangeRatio: a.RandomRangeRatio,
			PrefixLen: a.RandomPrefixLen, BatchSize: a.RandomBatchSize, NoReranker: a.NoReranker,
		},
		Custom:    dataset.CustomParams{OutputLen: a.CustomOutputLen},
		SpecBench: dataset.SpecBenchParams{OutputLen: a.SpecBenchOutputLen},
		Sonnet:    dataset.SonnetParams{InputLen: a.SonnetInputLen, OutputLen: a.SonnetOutputLen, PrefixLen: a.SonnetPrefixLen},
		PrefixRepetition: dataset.PrefixRepetitionParams{
			PrefixLen: a.PrefixRepetitionPrefixLen, SuffixLen: a.PrefixRepetitionSuffixLen,
			NumPrefixes: a.PrefixRepetitionNumPrefix, OutputLen: a.PrefixRepetitionOutputLen,
		},
	}
	if a.DatasetPath != nil {
		s.Path = *a.DatasetPath
	}
	if a.SharegptOutputLen != nil {
		s.ShareGPT.OutputLen = *a.SharegptOutputLen
	}
	if a.SpecBenchCategory != nil {
		s.SpecBench.Category = *a.SpecBenchCategory
	}
	if a.NumPrompts <= 0 {
		s.NumPrompts = -1 // every row, as vLLM's num_prompts <= 0 for custom
	}
	return s
}

// engineConfig maps the serving flags onto engine.Config.
func engineConfig(a *benchArgs, plan *benchPlan, baseURL string, tok *tokenizer.Tokenizer) engine.Config {
	cfg := engine.Config{
		BaseURL:         baseURL,
		Endpoint:        a.Endpoint,
		Backend:         a.Backend,
		Model:           a.Model,
		Tokenizer:       tok,
		RequestRate:     a.RequestRate,
		Burstiness:      a.Burstiness,
		NumWarmups:      a.NumWarmups,
		ReadyTimeout:    time.Duration(a.ReadyCheckTimeoutSec) * time.Second,
		RequestTimeout:  time.Duration(a.RequestTimeoutSec * float64(time.Second)),
		MaxDuration:     time.Duration(a.MaxDurationSec * float64(time.Second)),
		Seed:            int64(a.Seed),
		IgnoreEOS:       plan.IgnoreEOS,
		Logprobs:        a.Logprobs,
		ExtraBody:       a.ExtraBody,
		Headers:         plan.Headers,
		LoRAModules:     a.LoRAModules,
		RequestIDPrefix: a.RequestIDPrefix,
		Profile:         a.Profile,
		Sampling: client.Sampling{
			Temperature: a.Temperature, TopP: a.TopP, TopK: a.TopK, MinP: a.MinP,
			FrequencyPenalty: a.FrequencyPenalty, PresencePenalty: a.PresencePenalty,
			RepetitionPenalty: a.RepetitionPenalty,
		},
	}
	if a.ServedModelName != nil {
		cfg.ModelName = *a.ServedModelName
	}
	if a.MaxConcurrency != nil {
		cfg.MaxConcurrency = *a.MaxConcurrency
	}
	if a.RampUpStrategy != nil {
		cfg.RampUp = &engine.RampUp{Strategy: *a.RampUpStrategy,
			StartRPS: float64(*a.RampUpStartRPS), EndRPS: float64(*a.RampUpEndRPS)}
	}
	return cfg
}

// printTraffic prints the lines vLLM prints before the main run.
func (r *benchRun) printTraffic() {
	a, w := r.args, r.stdout
	if a.ReadyCheckTimeoutSec <= 0 {
		fmt.Fprintln(w, "Skipping endpoint ready check.")
	}
	if a.NumWarmups > 0 {
		fmt.Fprintf(w, "Warming up with %d requests...\n", a.NumWarmups)
	}
	fmt.Fprintln(w, "Starting main benchmark run...")
	if a.RampUpStrategy != nil {
		fmt.Fprintf(w, "Traffic ramp-up strategy: %s.\n", *a.RampUpStrategy)
		fmt.Fprintf(w, "Will increase RPS from %d to %d RPS over the duration of the benchmark.\n", *a.RampUpStartRPS, *a.RampUpEndRPS)
	} else {
		fmt.Fprintf(w, "Traffic request rate: %s\n", metrics.PyFloat(a.RequestRate))
	}
	dist := "Gamma distribution"
	if a.Burstiness == 1 {
		dist = "Poisson process"
	}
	fmt.Fprintf(w, "Burstiness factor: %s (%s)\n", metrics.PyFloat(a.Burstiness), dist)
	conc := "None"
	if a.MaxConcurrency != nil {
		conc = fmt.Sprint(*a.MaxConcurrency)
	}
	fmt.Fprintf(w, "Maximum request concurrency: %s\n", conc)
}

func (r *benchRun) consoleSummary(sum *metrics.Summary) report.ConsoleSummary {
	a := r.args
	c := report.ConsoleSummary{
		Values:            sum,
		Pooling:           r.plan.Pooling,
		RequestRate:       a.RequestRate,
		Goodput:           len(r.plan.Goodput) > 0 && !r.plan.Pooling,
		PercentileMetrics: r.plan.PercentileMetrics,
		Percentiles:       r.plan.Percentiles,
	}
	if a.MaxConcurrency != nil {
		c.MaxConcurrency = *a.MaxConcurrency
	}
	return c
}
