package main

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/servegate/servegate/benchtest/engine"
	"github.com/servegate/servegate/benchtest/metrics"
	"github.com/servegate/servegate/benchtest/report"
	"github.com/servegate/servegate/benchtest/scenario"
)

// writeHTMLReport writes --report.
func (r *benchRun) writeHTMLReport(path string, tgt *benchTarget, res *engine.Result, console report.ConsoleSummary, info metrics.RunInfo, verdicts []scenario.Verdict) error {
	a := r.args
	title := fmt.Sprintf("servegate bench: %s on %s", a.Model, tgt.Kind)
	if r.scenario != nil {
		title = fmt.Sprintf("servegate bench: scenario %s, %s on %s", r.scenario.Name, a.Model, tgt.Kind)
	}
	return writeHTMLFile(path, report.HTMLReport{
		Title:     title,
		Generated: res.Start.Add(res.Duration),
		Settings:  r.reportSettings(tgt, info),
		Records:   res.Records,
		Summary:   console,
		SLOs:      verdicts,
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
		rate := metrics.PyFloat(a.RequestRate) + " req/s"
		if math.IsInf(a.RequestRate, 1) {
			rate = "inf (all at once)"
		}
		s = append(s, report.ReportSetting{Name: "request rate", Value: rate})
	}
	s = append(s, report.ReportSetting{Name: "burstiness", Value: metrics.PyFloat(a.Burstiness)})
	conc := "none"
	if a.MaxConcurrency != nil {
		conc = fmt.Sprint(*a.MaxConcurrency)
	}
	s = append(s, report.ReportSetting{Name: "max concurrency", Value: conc})
	if len(r.plan.Goodput) > 0 {
		var parts []string
		for _, k := range []string{"ttft", "tpot", "e2el"} {
			if v, ok := r.plan.Goodput[k]; ok {
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

func datasetDescription(a *benchArgs) string {
	switch a.DatasetName {
	case "random":
		d := fmt.Sprintf("random (input %d, output %d tokens", a.RandomInputLen, a.RandomOutputLen)
		if a.RandomRangeRatio > 0 {
			d += fmt.Sprintf(", range ratio %s", metrics.PyFloat(a.RandomRangeRatio))
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
