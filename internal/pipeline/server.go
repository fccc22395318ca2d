package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/servermetrics"
)

// This file is the server-metrics part of Execute: the recorder around the
// engine, the checks it allows, and what it adds to the result JSON.

// startServerMetrics scrapes the target once before anything of the run
// is sent and returns the recorder, or nil when the plan does not scrape.
func startServerMetrics(ctx context.Context, plan *Plan, tgt *Target) *servermetrics.Recorder {
	if plan.ServerMetrics.Off {
		return nil
	}
	rec := servermetrics.NewRecorder(tgt.BaseURL, plan.ServerMetrics, plan.Engine.Headers)
	rec.Before(ctx)
	return rec
}

// stopServerMetrics ends the scrapes (with a last one, even when ctx is
// done) and summarises them.
func stopServerMetrics(ctx context.Context, rec *servermetrics.Recorder) *servermetrics.Summary {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rec.Stop(sctx)
	return servermetrics.Summarize(rec)
}

// serverLookup extends a summary lookup with server.<name>.
func serverLookup(lookup func(string) (float64, bool), s *servermetrics.Summary) func(string) (float64, bool) {
	return func(name string) (float64, bool) {
		if rest, ok := strings.CutPrefix(name, scenario.ServerPrefix); ok {
			return s.Value(rest)
		}
		return lookup(name)
	}
}

// ErrPrefixCacheWarm marks the warnings of a prefix cache that earlier
// runs warmed.
var ErrPrefixCacheWarm = errors.New("prefix cache")

// hitRates remembers the prefix-cache hit rate of each plan on each
// target across the runs of the process (b.N iterations, -count repeats).
var hitRates = struct {
	sync.Mutex
	m map[string]float64
}{m: map[string]float64{}}

// serverWarnings checks a run against its server's metrics: the client's
// and the server's output token counts, and a prefix cache that earlier
// runs warmed (vLLM issue #52884) and no reset emptied.
func serverWarnings(o *Outcome) []error {
	s, plan := o.Server, o.Plan
	var out []error
	if s.Note != "" {
		out = append(out, fmt.Errorf("server metrics: %s", s.Note))
	}
	if !s.Available {
		return out
	}
	if gen, ok := s.Value("generation_tokens"); ok && !plan.Summary.Pooling && o.Summary.Failed == 0 {
		client := float64(o.Summary.TotalOutput)
		if math.Abs(gen-client) > math.Max(1, 0.01*client) {
			out = append(out, fmt.Errorf("server metrics: the server generated %.0f tokens during the run, the client counted %.0f", gen, client))
		}
	}
	reset := o.PrefixCache != nil && o.PrefixCache.Done
	if hits := s.Before[servermetrics.PrefixCacheHits]; hits > 0 && !reset && !sharesPrefix(plan.Dataset) {
		out = append(out, fmt.Errorf("%w: the server had already served %.0f cached prompt tokens before this run, whose dataset declares no shared prefix; prompts of earlier runs may be cached and inflate its results (vLLM issue #52884)", ErrPrefixCacheWarm, hits))
	}
	if rate, ok := s.Value("prefix_cache_hit_rate"); ok {
		key := fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%d", o.Target.BaseURL, plan.Name, plan.SHA, plan.Dataset.Seed, plan.Dataset.NumPrompts)
		hitRates.Lock()
		prev, seen := hitRates.m[key]
		hitRates.m[key] = rate
		hitRates.Unlock()
		if seen && rate > prev+0.01 {
			out = append(out, fmt.Errorf("%w: the hit rate grew from %.3f to %.3f across repeats of the same prompts; the earlier runs left them cached (vLLM issue #52884)", ErrPrefixCacheWarm, prev, rate))
		}
	}
	return out
}

// sharesPrefix reports whether a dataset declares prompts with a shared
// prefix.
func sharesPrefix(d dataset.Spec) bool {
	switch d.Name {
	case dataset.PrefixRepetition:
		return true
	case dataset.Random:
		return d.Random.PrefixLen > 0
	case dataset.Sonnet:
		return d.Sonnet.PrefixLen > 0
	}
	return false
}

// serverFields are the result JSON's server_metrics object, its
// server_config object (what the server states about its configuration:
// the labels of its info metrics, and the flags servegate started it
// with) and, in a detailed result, the raw series (times in seconds from
// start).
func serverFields(s *servermetrics.Summary, serveArgs []string, start time.Time, detailed bool) []metrics.Field {
	obj := []metrics.Field{
		{Key: "available", Value: s.Available},
		{Key: "interval_s", Value: s.Interval.Seconds()},
		{Key: "scrapes", Value: s.Scrapes},
		{Key: "failed_scrapes", Value: s.FailedScrapes},
	}
	for _, n := range servermetrics.Names {
		if v, ok := s.Value(n); ok {
			obj = append(obj, metrics.Field{Key: n, Value: v})
		}
	}
	if s.Note != "" {
		obj = append(obj, metrics.Field{Key: "note", Value: s.Note})
	}
	out := []metrics.Field{{Key: "server_metrics", Value: obj}}
	if cfg := serverConfig(s.Info, serveArgs); cfg != nil {
		out = append(out, metrics.Field{Key: "server_config", Value: cfg})
	}
	if !detailed || len(s.Series) == 0 {
		return out
	}
	t := make([]float64, len(s.Series))
	for i, snap := range s.Series {
		t[i] = snap.At.Sub(start).Seconds()
	}
	series := []metrics.Field{{Key: "t", Value: t}}
	for _, name := range servermetrics.SeriesColumns() {
		col, found := make([]any, len(s.Series)), false
		for i, snap := range s.Series {
			if v, ok := snap.Values[name]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				col[i], found = v, true // a scrape without the metric leaves null
			}
		}
		if found {
			series = append(series, metrics.Field{Key: name, Value: col})
		}
	}
	return append(out, metrics.Field{Key: "server_metrics_series", Value: series})
}

// ServerSeries are the server's KV-cache use and requests waiting and
// running over the run, for the HTML report; nil without server metrics.
func (o *Outcome) ServerSeries() []report.ServerSeries {
	s := o.Server
	if s == nil || !s.Available {
		return nil
	}
	var out []report.ServerSeries
	for _, m := range []struct{ name, title, unit, caption string }{
		{servermetrics.KVCacheUsage, "Server KV-cache use", "fraction", "vllm:kv_cache_usage_perc at each scrape"},
		{servermetrics.RequestsRunning, "Server requests running", "requests", "vllm:num_requests_running at each scrape"},
		{servermetrics.RequestsWaiting, "Server requests waiting", "requests", "vllm:num_requests_waiting at each scrape"},
	} {
		t, v := s.Column(m.name, o.Result.Start)
		if len(t) > 0 {
			out = append(out, report.ServerSeries{Title: m.title, Unit: m.unit, Caption: m.caption, T: t, V: v})
		}
	}
	return out
}

// serverConfig is the result JSON's server_config object: each info
// family's labels (sorted) and serve_args; nil when there is neither.
func serverConfig(info map[string]map[string]string, serveArgs []string) []metrics.Field {
	var out []metrics.Field
	for _, fam := range slices.Sorted(maps.Keys(info)) {
		labels := info[fam]
		var obj []metrics.Field
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			obj = append(obj, metrics.Field{Key: k, Value: labels[k]})
		}
		out = append(out, metrics.Field{Key: fam, Value: obj})
	}
	if serveArgs != nil {
		args := make([]string, len(serveArgs))
		for i, a := range serveArgs {
			args[i] = redact.String(a)
		}
		out = append(out, metrics.Field{Key: "serve_args", Value: args})
	}
	return out
}
