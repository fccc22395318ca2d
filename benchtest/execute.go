package benchtest

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/servegate/servegate/benchtest/client"
	"github.com/servegate/servegate/benchtest/dataset"
	"github.com/servegate/servegate/benchtest/engine"
	"github.com/servegate/servegate/benchtest/metrics"
	"github.com/servegate/servegate/benchtest/report"
	"github.com/servegate/servegate/benchtest/scenario"
)

// An outcome is what one run of a scenario produced.
type outcome struct {
	sc       *scenario.Scenario
	target   *Target
	result   *engine.Result
	summary  *metrics.Summary
	lookup   func(string) (float64, bool)
	verdicts []scenario.Verdict
	// tokenizer names the tokenizer used (fixture, path or model id).
	tokenizer string
}

// execute runs sc once against tgt: dataset, engine, summary, verdicts.
func execute(ctx context.Context, sc *scenario.Scenario, tgt *Target) (*outcome, error) {
	tok, tokName, err := loadTokenizer(ctx, sc.Target.Tokenizer, tgt.Model)
	if err != nil {
		return nil, err
	}
	samples, err := dataset.Load(ctx, datasetSpec(sc), tok)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	cfg := engineConfig(sc, tgt)
	cfg.Tokenizer = tok
	res, err := engine.Run(ctx, cfg, samples)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	sum := metrics.Summarize(res.Records, res.Duration, metrics.Options{
		PercentileMetrics: sc.Metrics.PercentileMetrics,
		Percentiles:       sc.Metrics.Percentiles,
		Goodput:           sc.SLO.Goodput,
		Pooling:           client.IsPooling(sc.Backend),
	})
	o := &outcome{sc: sc, target: tgt, result: res, summary: sum, tokenizer: tokName}
	o.lookup = scenario.WithDerived(sum.Value)
	o.verdicts = sc.SLO.Check(o.lookup)
	return o, nil
}

// datasetSpec maps the scenario's dataset keys to the dataset package's.
func datasetSpec(sc *scenario.Scenario) dataset.Spec {
	d := sc.Dataset
	return dataset.Spec{
		Name:             d.Name,
		NumPrompts:       d.NumPrompts,
		Seed:             d.Seed,
		Path:             d.Path,
		Backend:          sc.Backend,
		RequestIDPrefix:  sc.Name + "-",
		NoOversample:     d.NoOversample,
		DisableShuffle:   d.DisableShuffle,
		SkipChatTemplate: d.SkipChatTemplate,
		TraceReplay:      sc.Load.TraceReplay,
		TraceSpeed:       sc.Load.TraceSpeed,
		Random: dataset.RandomParams{
			InputLen: d.InputLen, OutputLen: d.OutputLen, RangeRatio: d.RangeRatio, PrefixLen: d.PrefixLen,
		},
		ShareGPT:  dataset.ShareGPTParams{OutputLen: d.OutputLen},
		Custom:    dataset.CustomParams{OutputLen: d.OutputLen},
		SpecBench: dataset.SpecBenchParams{OutputLen: d.OutputLen},
		Sonnet:    dataset.SonnetParams{InputLen: d.InputLen, OutputLen: d.OutputLen, PrefixLen: d.PrefixLen},
		PrefixRepetition: dataset.PrefixRepetitionParams{
			PrefixLen: d.PrefixLen, SuffixLen: d.SuffixLen, NumPrefixes: d.NumPrefixes, OutputLen: d.OutputLen,
		},
	}
}

// engineConfig maps the scenario's load and request keys to the engine's.
func engineConfig(sc *scenario.Scenario, tgt *Target) engine.Config {
	l := sc.Load
	s := sc.Sampling
	cfg := engine.Config{
		BaseURL:         tgt.BaseURL,
		Endpoint:        sc.Endpoint,
		Backend:         sc.Backend,
		Model:           tgt.Model,
		ModelName:       tgt.ServedModelName,
		RequestRate:     l.RequestRate,
		Burstiness:      l.Burstiness,
		MaxConcurrency:  l.MaxConcurrency,
		NumWarmups:      l.Warmups,
		ReadyTimeout:    l.ReadyTimeout.D(),
		RequestTimeout:  l.RequestTimeout.D(),
		MaxDuration:     l.MaxDuration.D(),
		Seed:            sc.Dataset.Seed,
		IgnoreEOS:       s.IgnoreEOS || dataset.ForcesIgnoreEOS(sc.Dataset.Name, sc.Backend),
		ExtraBody:       sc.ExtraBody,
		Headers:         sc.Headers,
		RequestIDPrefix: sc.Name + "-",
		TraceArrivals:   l.TraceReplay,
		TraceSpeed:      l.TraceSpeed,
		Sampling: client.Sampling{
			Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP,
			FrequencyPenalty: s.FrequencyPenalty, PresencePenalty: s.PresencePenalty, RepetitionPenalty: s.RepetitionPenalty,
		},
	}
	if r := l.RampUp; r != nil {
		cfg.RampUp = &engine.RampUp{Strategy: r.Strategy, StartRPS: r.StartRPS, EndRPS: r.EndRPS}
		cfg.RequestRate = math.Inf(1)
	}
	return cfg
}

// resultJSON renders vLLM's result JSON with per-request detail.
func (o *outcome) resultJSON() []byte {
	sc := o.sc
	info := metrics.RunInfo{
		Date:           o.result.Start.Format("20060102-150405"),
		Backend:        sc.Backend,
		Label:          sc.Name,
		ModelID:        o.target.Model,
		TokenizerID:    o.tokenizer,
		NumPrompts:     sc.Dataset.NumPrompts,
		RequestRate:    sc.Load.RequestRate,
		Burstiness:     sc.Load.Burstiness,
		MaxConcurrency: sc.Load.MaxConcurrency,
		RPSChanges:     o.result.RPSChanges,
		Extras:         true,
		Metadata: [][2]string{
			{"scenario", sc.Name}, {"scenario-sha", sc.SHA}, {"target", o.target.Kind}, {"image", o.target.Image},
		},
	}
	if r := sc.Load.RampUp; r != nil {
		info.RampUpStrategy = r.Strategy
		info.RampUpStartRPS, info.RampUpEndRPS = int(r.StartRPS), int(r.EndRPS)
		info.RequestRate = math.Inf(1)
	}
	return o.summary.ResultJSON(info, true)
}

// benchConfig is the benchfmt file configuration of a run: what must be
// equal for two results to be comparable.
func (o *outcome) benchConfig() []report.BenchConfig {
	sc := o.sc
	return []report.BenchConfig{
		{Key: "model", Value: o.target.Model},
		{Key: "target", Value: o.target.Kind},
		{Key: "image", Value: o.target.Image},
		{Key: "backend", Value: sc.Backend},
		{Key: "endpoint", Value: sc.Endpoint},
		{Key: "dataset", Value: sc.Dataset.Name},
		{Key: "scenario-sha", Value: sc.SHA},
	}
}

// benchMetrics are the run's values in benchstat units.
func (o *outcome) benchMetrics() []report.BenchMetric {
	return report.BenchMetrics(o.lookup, o.sc.Metrics.Percentiles)
}

// runContext bounds a run: the scenario's max duration plus a margin for
// the dataset and the readiness check, else no limit but the test's.
func runContext(ctx context.Context, sc *scenario.Scenario) (context.Context, context.CancelFunc) {
	if d := sc.Load.MaxDuration.D(); d > 0 {
		return context.WithTimeout(ctx, d+sc.Load.ReadyTimeout.D()+time.Minute)
	}
	return context.WithCancel(ctx)
}
