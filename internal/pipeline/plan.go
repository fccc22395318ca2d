package pipeline

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/engine"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/servermetrics"
	"github.com/servegate/servegate/internal/tokenizer"
)

// A Plan is one run, resolved: everything the executor needs, whichever
// front door built it. A scenario becomes a Plan through NewPlan (Run,
// Bench and `servegate bench --scenario`); `servegate bench` flags become
// one in cmd/servegate, starting from NewPlan's when a scenario is given
// and applying only the flags given explicitly. StartTarget starts
// Plan.Target and Execute runs the Plan on it.
//
// A Plan is plain data: two doors that agree build equal Plans, which a
// test checks. Execute fills what only the running target knows (base
// URL, model names, image).
type Plan struct {
	// Name names the run: the scenario's name, or "" for a plain
	// `servegate bench` run.
	Name string
	// SHA is the scenario's content hash (scenario.Scenario.SHA), "" for a
	// plain run.
	SHA string
	// Target is the server under test, started by StartTarget.
	Target scenario.Target
	// Tokenizer is what tokenizer.Load takes: a bundled name, a path, or a
	// model id.
	Tokenizer string
	// Hub says where model-id tokenizers are found and whether a missing
	// one may be downloaded (only `servegate bench` without a scenario
	// downloads, as vLLM does; scenarios and tests never do).
	Hub tokenizer.Hub
	// Dataset says which requests are sent.
	Dataset dataset.Spec
	// Engine drives the run. BaseURL, Model, ModelName and Tokenizer are
	// left empty: Execute takes them from the target and Tokenizer.
	Engine engine.Config
	// Summary selects the percentiles and goodput SLOs of the summary.
	Summary metrics.Options
	// SLO holds the bounds the run is checked against (none for a plain
	// `servegate bench` run).
	SLO scenario.SLO
	// Harness holds the limits on the load generator's health past which
	// the run is invalid (the scenario's harness; the zero value, of a
	// plain `servegate bench` run, checks nothing but still measures).
	Harness scenario.Harness
	// ServerMetrics says whether and how often the server's metrics are
	// scraped. NewPlan scrapes every second unless the scenario turns it
	// off; a plain `servegate bench` run scrapes only when asked.
	ServerMetrics servermetrics.Options
	// Capacity, when set, makes the plan a capacity search (CapacitySearch)
	// instead of one run.
	Capacity *scenario.Capacity
	// Sessions, when set, makes the plan a multi-turn run: Prepare loads
	// the conversations of Sessions.Source (relative paths from
	// SessionsDir) instead of the dataset, and Execute runs
	// engine.RunSessions instead of engine.Run.
	Sessions *scenario.Sessions
	// SessionsDir is the directory a session source's relative paths
	// start from: the scenario file's.
	SessionsDir string
	// Info is the result JSON's header. Outcome.RunInfo fills Date,
	// RPSChanges, ModelID when empty, the load (request rate, burstiness,
	// concurrency, ramp-up) from Engine and, with Info.Extras, the target
	// metadata.
	Info metrics.RunInfo

	samples []dataset.Sample
	convs   []conversation.Conversation
	tok     *tokenizer.Tokenizer
}

// NewPlan maps a scenario (after its environment overrides) onto a Plan.
func NewPlan(sc *scenario.Scenario) *Plan {
	d, l, s := sc.Dataset, sc.Load, sc.Sampling
	prefix := sc.Name + "-"
	p := &Plan{
		Name:      sc.Name,
		SHA:       sc.SHA,
		Target:    sc.Target,
		Tokenizer: scenario.ResolveTokenizer(sc.Target.Tokenizer, sc.Target.Model),
		Dataset: dataset.Spec{
			Name:             d.Name,
			NumPrompts:       d.NumPrompts,
			Seed:             d.Seed,
			Path:             d.Path,
			Backend:          sc.Backend,
			RequestIDPrefix:  prefix,
			NoOversample:     d.NoOversample,
			DisableShuffle:   d.DisableShuffle,
			SkipChatTemplate: d.SkipChatTemplate,
			TraceReplay:      l.TraceReplay,
			Random: dataset.RandomParams{
				InputLen: d.InputLen, OutputLen: d.OutputLen, RangeRatio: d.RangeRatio, PrefixLen: d.PrefixLen,
			},
			ShareGPT:  dataset.ShareGPTParams{OutputLen: d.OutputLen},
			Custom:    dataset.CustomParams{OutputLen: d.OutputLen},
			SpecBench: dataset.SpecBenchParams{OutputLen: d.OutputLen},
			Sonnet:    dataset.SonnetParams{InputLen: d.InputLen, OutputLen: d.OutputLen, PrefixLen: d.PrefixLen},
			TxtSlices: dataset.TxtSlicesParams{InputLen: d.InputLen, OutputLen: d.OutputLen},
			PrefixRepetition: dataset.PrefixRepetitionParams{
				PrefixLen: d.PrefixLen, SuffixLen: d.SuffixLen, NumPrefixes: d.NumPrefixes, OutputLen: d.OutputLen,
			},
		},
		Engine: engine.Config{
			Endpoint:        sc.Endpoint,
			Backend:         sc.Backend,
			RequestRate:     l.RequestRate,
			Burstiness:      l.Burstiness,
			MaxConcurrency:  l.MaxConcurrency,
			NumWarmups:      l.Warmups,
			ReadyTimeout:    l.ReadyTimeout.D(),
			RequestTimeout:  l.RequestTimeout.D(),
			MaxDuration:     l.MaxDuration.D(),
			Seed:            d.Seed,
			IgnoreEOS:       s.IgnoreEOS || dataset.ForcesIgnoreEOS(d.Name, sc.Backend),
			ExtraBody:       sc.ExtraBody,
			Headers:         sc.Headers,
			RequestIDPrefix: prefix,
			TraceArrivals:   l.TraceReplay,
			TraceSpeed:      l.TraceSpeed,
			WarmConnections: warmConnections(*l.WarmConnections),
			MaxLineBytes:    l.MaxLineBytes,
			Sampling: client.Sampling{
				Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP,
				FrequencyPenalty: s.FrequencyPenalty, PresencePenalty: s.PresencePenalty, RepetitionPenalty: s.RepetitionPenalty,
			},
		},
		Summary: metrics.Options{
			PercentileMetrics: sc.Metrics.PercentileMetrics,
			Percentiles:       sc.Metrics.Percentiles,
			Goodput:           sc.SLO.Goodput,
			Pooling:           client.IsPooling(sc.Backend),
		},
		SLO:     sc.SLO,
		Harness: sc.Harness,
		ServerMetrics: servermetrics.Options{
			Interval: sc.ServerMetrics.ScrapeInterval(),
			Off:      !sc.ServerMetrics.Scrapes(),
			Path:     sc.ServerMetrics.Path,
		},
		Capacity: sc.Capacity,
		Info: metrics.RunInfo{
			Backend:    sc.Backend,
			Label:      sc.Name,
			ModelID:    sc.Target.Model,
			NumPrompts: d.NumPrompts,
			Metadata:   [][2]string{{"scenario", sc.Name}, {"scenario-sha", sc.SHA}},
			Extras:     true,
		},
	}
	if r := l.RampUp; r != nil {
		p.Engine.RampUp = &engine.RampUp{Strategy: r.Strategy, StartRPS: r.StartRPS, EndRPS: r.EndRPS}
		p.Engine.RequestRate = math.Inf(1)
	}
	p.Info.TokenizerID = p.Tokenizer
	if sc.Sessions != nil {
		p.Sessions = sc.Sessions
		if sc.File != "" {
			p.SessionsDir = filepath.Dir(sc.File)
		}
		p.Dataset.Name = "sessions-" + sc.Sessions.Source.Kind
		p.Dataset.Seed, p.Engine.Seed = sc.Sessions.Seed, sc.Sessions.Seed
		p.Info.Metadata = append(p.Info.Metadata, [2]string{"sessions", sc.Sessions.Source.Kind},
			[2]string{"session_rate", strconv.FormatFloat(sc.Sessions.Arrival.Rate, 'g', -1, 64)})
	}
	return p
}

// RunInfo is Info with the load the engine runs: request rate,
// burstiness, concurrency and ramp-up, taken from Engine so that the
// header cannot disagree with what ran.
func (p *Plan) RunInfo() metrics.RunInfo {
	info := p.Info
	e := &p.Engine
	info.RequestRate, info.Burstiness, info.MaxConcurrency = e.RequestRate, e.Burstiness, e.MaxConcurrency
	info.RampUpStrategy, info.RampUpStartRPS, info.RampUpEndRPS = "", 0, 0
	if r := e.RampUp; r != nil {
		info.RampUpStrategy, info.RampUpStartRPS, info.RampUpEndRPS = r.Strategy, int(r.StartRPS), int(r.EndRPS)
	}
	return info
}

// warmConnections maps load.warm_connections onto the engine's count.
func warmConnections(on bool) int {
	if on {
		return engine.WarmAuto
	}
	return 0
}

// preparedDatasets holds the samples of the process's recent plans (at
// most dataset.DefaultCacheBytes of text), so that running a scenario
// again in one process (go test -count 10, Run then Bench, a paired run)
// does not build and tokenize its prompts again. A capacity search's steps
// each draw a seed of their own, on purpose, so they are new prompts;
// repeating the search does not repeat its seeds either.
var preparedDatasets dataset.Cache

// Prepare loads the tokenizer and the dataset, once: Execute calls it, and
// `servegate bench` calls it before starting a target so that a bad
// dataset fails before any container starts. A prepared Plan keeps its
// samples, so repeated runs send the same requests; another Plan with the
// same dataset, tokenizer and file contents gets the same samples from
// memory (see dataset.Cache for the key).
func (p *Plan) Prepare(ctx context.Context) error {
	if p.samples != nil || p.convs != nil {
		return nil
	}
	tok, err := loadTokenizer(ctx, p.Tokenizer, p.Hub)
	if err != nil {
		return err
	}
	if p.Sessions != nil {
		return p.prepareSessions(ctx, tok)
	}
	samples, err := preparedDatasets.Load(ctx, p.Dataset, tok)
	if err != nil {
		if p.Name != "" {
			return fmt.Errorf("scenario %s: %w", p.Name, err)
		}
		return err
	}
	p.tok, p.samples = tok, samples
	return nil
}

// Samples returns the prepared requests (nil before Prepare).
func (p *Plan) Samples() []dataset.Sample { return p.samples }

// LoadedTokenizer returns the tokenizer Prepare loaded (nil before
// Prepare): the one that counted the samples' prompt tokens.
func (p *Plan) LoadedTokenizer() *tokenizer.Tokenizer { return p.tok }
