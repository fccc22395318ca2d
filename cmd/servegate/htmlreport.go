package main

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/pipeline"
	"github.com/servegate/servegate/internal/report"
)

// writeHTMLReport writes --report.
func (r *benchRun) writeHTMLReport(path string, o *pipeline.Outcome, console report.ConsoleSummary, info metrics.RunInfo) error {
	title := fmt.Sprintf("servegate bench: %s on %s", info.ModelID, o.Target.Kind)
	if r.plan.Name != "" {
		title = fmt.Sprintf("servegate bench: scenario %s, %s on %s", r.plan.Name, info.ModelID, o.Target.Kind)
	}
	return writeHTMLFile(path, report.HTMLReport{
		Title:     title,
		Generated: o.Result.Start.Add(o.Result.Duration),
		Settings:  r.reportSettings(o.Target, info),
		Records:   o.Result.Records,
		Summary:   console,
		SLOs:      o.Table(),
		Server:    o.ServerSeries(),
	})
}

// writeHTMLFile writes an HTML report to path (--report of bench and
// report).
func writeHTMLFile(path string, rep report.HTMLReport) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	werr := report.WriteHTMLReport(f, rep)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// reportSettings lists the run's configuration for the HTML report.
func (r *benchRun) reportSettings(tgt *pipeline.Target, info metrics.RunInfo) []report.ReportSetting {
	p := r.plan
	e := p.Engine
	s := []report.ReportSetting{
		{Name: "target", Value: tgt.Kind},
		{Name: "base URL", Value: tgt.BaseURL},
		{Name: "backend / endpoint", Value: e.Backend + " " + e.Endpoint},
		{Name: "model", Value: info.ModelID},
		{Name: "tokenizer", Value: info.TokenizerID},
		{Name: "dataset", Value: datasetDescription(p.Dataset)},
		{Name: "num prompts", Value: fmt.Sprint(info.NumPrompts)},
		{Name: "seed", Value: fmt.Sprint(p.Dataset.Seed)},
	}
	if tgt.Image != "" {
		s = append(s, report.ReportSetting{Name: "image", Value: tgt.Image})
	}
	if ru := e.RampUp; ru != nil {
		s = append(s, report.ReportSetting{Name: "ramp-up", Value: fmt.Sprintf("%s %d → %d req/s", ru.Strategy, int(ru.StartRPS), int(ru.EndRPS))})
	} else {
		rate := metrics.PyFloat(e.RequestRate) + " req/s"
		if math.IsInf(e.RequestRate, 1) {
			rate = "inf (all at once)"
		}
		s = append(s, report.ReportSetting{Name: "request rate", Value: rate})
	}
	s = append(s, report.ReportSetting{Name: "burstiness", Value: metrics.PyFloat(e.Burstiness)})
	conc := "none"
	if e.MaxConcurrency > 0 {
		conc = fmt.Sprint(e.MaxConcurrency)
	}
	s = append(s, report.ReportSetting{Name: "max concurrency", Value: conc})
	if len(p.Summary.Goodput) > 0 {
		var parts []string
		for _, k := range []string{"ttft", "tpot", "e2el"} {
			if v, ok := p.Summary.Goodput[k]; ok {
				parts = append(parts, fmt.Sprintf("%s ≤ %s ms", k, metrics.PyFloat(v)))
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

func datasetDescription(d dataset.Spec) string {
	switch d.Name {
	case "", dataset.Random:
		r := d.Random
		desc := fmt.Sprintf("random (input %d, output %d tokens", r.InputLen, r.OutputLen)
		if r.RangeRatio > 0 {
			desc += fmt.Sprintf(", range ratio %s", metrics.PyFloat(r.RangeRatio))
		}
		if r.PrefixLen > 0 {
			desc += fmt.Sprintf(", prefix %d", r.PrefixLen)
		}
		return desc + ")"
	}
	if d.Path != "" {
		return d.Name + " (" + d.Path + ")"
	}
	return d.Name
}
