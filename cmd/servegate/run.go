package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/servegate/servegate/benchtest/client"
	"github.com/servegate/servegate/benchtest/dataset"
	"github.com/servegate/servegate/benchtest/engine"
	"github.com/servegate/servegate/benchtest/metrics"
	"github.com/servegate/servegate/benchtest/report"
	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/benchtest/tokenizer"
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

// execute runs the benchmark end to end: tokenizer, target, dataset,
// engine, summary, then the console report, the result files and the
// HTML report.
func (r *benchRun) execute(ctx context.Context) error {
	a, plan := r.args, r.plan
	tok, err := loadTokenizer(ctx, plan.TokenizerID)
	if err != nil {
		return err
	}
	defer tok.Close()

	spec := datasetSpec(a)
	if sc := r.scenario; sc != nil {
		spec.TraceReplay, spec.TraceSpeed = sc.Load.TraceReplay, sc.Load.TraceSpeed
	}
	samples, err := dataset.Load(ctx, spec, tok)
	if err != nil {
		return err
	}

	served := a.Model
	if a.ServedModelName != nil {
		served = *a.ServedModelName
	}
	so, err := r.targetOptions()
	if err != nil {
		return err
	}
	tgt, err := startTarget(ctx, a.Target, plan.BaseURL, a.Model, served, tok, so, r.stderr)
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
	if tgt.Kind != "url" {
		fmt.Fprintf(r.stdout, "Started %s target at %s\n", tgt.Kind, tgt.BaseURL)
	}

	cfg := engineConfig(a, plan, tgt.BaseURL, tok)
	if sc := r.scenario; sc != nil {
		cfg.TraceArrivals, cfg.TraceSpeed = sc.Load.TraceReplay, sc.Load.TraceSpeed
		cfg.MaxDuration = sc.Load.MaxDuration.D()
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
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(r.stderr, "warning: %v\n", w)
	}
	if res.Stopped != nil {
		fmt.Fprintf(r.stderr, "warning: run stopped early: %v\n", res.Stopped)
	}

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
		knobs, err := simSettings(sc.Target)
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
	tok, err := tokenizer.FromPretrained(ctx, id, hub)
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
		fmt.Fprintf(w, "Traffic request rate: %s\n", pyFloat(a.RequestRate))
	}
	dist := "Gamma distribution"
	if a.Burstiness == 1 {
		dist = "Poisson process"
	}
	fmt.Fprintf(w, "Burstiness factor: %s (%s)\n", pyFloat(a.Burstiness), dist)
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

// runInfo is the header of the result JSON.
func (r *benchRun) runInfo(res *engine.Result) metrics.RunInfo {
	a := r.args
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	info := metrics.RunInfo{
		Date:        now().Format("20060102-150405"),
		Backend:     a.Backend,
		ModelID:     a.Model,
		TokenizerID: r.plan.TokenizerID,
		NumPrompts:  a.NumPrompts,
		RequestRate: a.RequestRate,
		Burstiness:  a.Burstiness,
		RPSChanges:  res.RPSChanges,
	}
	if a.Label != nil {
		info.Label = *a.Label
	}
	for _, kv := range r.plan.Metadata {
		info.Metadata = append(info.Metadata, [2]string{kv.Key, kv.Value})
	}
	if a.MaxConcurrency != nil {
		info.MaxConcurrency = *a.MaxConcurrency
	}
	if a.RampUpStrategy != nil {
		info.RampUpStrategy = *a.RampUpStrategy
		info.RampUpStartRPS, info.RampUpEndRPS = *a.RampUpStartRPS, *a.RampUpEndRPS
	}
	return info
}

// resultPath names the result file as vLLM does:
// {label}-{rate}qps[-concurrency{n}]-{model}-{date}.json, or
// {label}-ramp-up-{strategy}-{start}qps-{end}qps[-concurrency{n}]-{model}-{date}.json,
// unless --result-filename is given; under --result-dir when given.
func resultPath(a *benchArgs, date string) string {
	label := a.Backend
	if a.Label != nil && *a.Label != "" {
		label = *a.Label
	}
	model := a.Model[strings.LastIndex(a.Model, "/")+1:]
	conc := ""
	if a.MaxConcurrency != nil {
		conc = fmt.Sprintf("-concurrency%d", *a.MaxConcurrency)
	}
	var name string
	if a.RampUpStrategy != nil {
		name = fmt.Sprintf("%s-ramp-up-%s-%dqps-%dqps%s-%s-%s.json", label, *a.RampUpStrategy, *a.RampUpStartRPS, *a.RampUpEndRPS, conc, model, date)
	} else {
		name = fmt.Sprintf("%s-%sqps%s-%s-%s.json", label, pyFloat(a.RequestRate), conc, model, date)
	}
	if a.ResultFilename != nil && *a.ResultFilename != "" {
		name = *a.ResultFilename
	}
	if a.ResultDir != nil && *a.ResultDir != "" {
		name = filepath.Join(*a.ResultDir, name)
	}
	return name
}

// saveResult writes the result JSON (and the PyTorch records when
// $SAVE_TO_PYTORCH_BENCHMARK_FORMAT asks for them).
func (r *benchRun) saveResult(sum *metrics.Summary, info metrics.RunInfo) error {
	a := r.args
	path := resultPath(a, info.Date)
	if err := metrics.WriteResult(path, sum.ResultJSON(info, a.SaveDetailed), a.AppendResult); err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "Saved result: %s\n", path)
	if pt := sum.PytorchRecords(info, a.SaveDetailed, r.parser.values()); pt != nil {
		if err := metrics.WriteResult(metrics.PytorchPath(path), pt, false); err != nil {
			return err
		}
	}
	return nil
}

// writeHTMLReport writes --report.
func (r *benchRun) writeHTMLReport(path string, tgt *benchTarget, res *engine.Result, console report.ConsoleSummary, info metrics.RunInfo, verdicts []scenario.Verdict) error {
	a := r.args
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	title := fmt.Sprintf("servegate bench: %s on %s", a.Model, tgt.Kind)
	if r.scenario != nil {
		title = fmt.Sprintf("servegate bench: scenario %s, %s on %s", r.scenario.Name, a.Model, tgt.Kind)
	}
	werr := report.WriteHTMLReport(f, report.HTMLReport{
		Title:     title,
		Generated: res.Start.Add(res.Duration),
		Settings:  r.reportSettings(tgt, info),
		Records:   res.Records,
		Summary:   console,
		SLOs:      verdicts,
	})
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// reportSettings lists the run's configuration for the HTML report.
func (r *benchRun) reportSettings(tgt *benchTarget, info metrics.RunInfo) []report.ReportSetting {
	a := r.args
	s := []report.ReportSetting{
		{Name: "target", Value: tgt.Kind},
		{Name: "base URL", Value: tgt.BaseURL},
		{Name: "backend / endpoint", Value: a.Backend + " " + a.Endpoint},
		{Name: "model", Value: a.Model},
		{Name: "tokenizer", Value: r.plan.TokenizerID},
		{Name: "dataset", Value: datasetDescription(a)},
		{Name: "num prompts", Value: fmt.Sprint(a.NumPrompts)},
		{Name: "seed", Value: fmt.Sprint(a.Seed)},
	}
	if tgt.Image != "" {
		s = append(s, report.ReportSetting{Name: "image", Value: tgt.Image})
	}
	if a.RampUpStrategy != nil {
		s = append(s, report.ReportSetting{Name: "ramp-up", Value: fmt.Sprintf("%s %d → %d req/s", *a.RampUpStrategy, *a.RampUpStartRPS, *a.RampUpEndRPS)})
	} else {
		rate := pyFloat(a.RequestRate) + " req/s"
		if math.IsInf(a.RequestRate, 1) {
			rate = "inf (all at once)"
		}
		s = append(s, report.ReportSetting{Name: "request rate", Value: rate})
	}
	s = append(s, report.ReportSetting{Name: "burstiness", Value: pyFloat(a.Burstiness)})
	conc := "none"
	if a.MaxConcurrency != nil {
		conc = fmt.Sprint(*a.MaxConcurrency)
	}
	s = append(s, report.ReportSetting{Name: "max concurrency", Value: conc})
	if len(r.plan.Goodput) > 0 {
		var parts []string
		for _, k := range []string{"ttft", "tpot", "e2el"} {
			if v, ok := r.plan.Goodput[k]; ok {
				parts = append(parts, fmt.Sprintf("%s ≤ %s ms", k, pyFloat(v)))
			}
		}
		s = append(s, report.ReportSetting{Name: "goodput SLOs", Value: strings.Join(parts, ", ")})
	}
	if info.Label != "" {
		s = append(s, report.ReportSetting{Name: "label", Value: info.Label})
	}
	for _, kv := range info.Metadata {
		s = append(s, report.ReportSetting{Name: kv[0], Value: kv[1]})
	}
	s = append(s, report.ReportSetting{Name: "date", Value: info.Date})
	return s
}

func datasetDescription(a *benchArgs) string {
	switch a.DatasetName {
	case "random":
		d := fmt.Sprintf("random (input %d, output %d tokens", a.RandomInputLen, a.RandomOutputLen)
		if a.RandomRangeRatio > 0 {
			d += fmt.Sprintf(", range ratio %s", pyFloat(a.RandomRangeRatio))
		}
		if a.RandomPrefixLen > 0 {
			d += fmt.Sprintf(", prefix %d", a.RandomPrefixLen)
		}
		return d + ")"
	}
	if a.DatasetPath != nil {
		return a.DatasetName + " (" + *a.DatasetPath + ")"
	}
	return a.DatasetName
}
