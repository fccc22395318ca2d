package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
)

const reportSummary = `Summarise a saved run again: read a result file that servegate bench wrote
with --save-detailed, print the plots and the console block, and
optionally write the HTML report. Percentiles and goodput SLOs may differ
from the run's. (vllm bench serve's own files lack the per-request start
times this needs.)`

// reportArgs are the flags of servegate report.
type reportArgs struct {
	PercentileMetrics *string
	MetricPercentiles string
	Goodput           []string
	Report            *string
	NoPlot            bool
	Files             []string
}

func newReportParser(a *reportArgs) *argParser {
	p := newArgParser("servegate report")
	g := "options"
	p.optStringVar(&a.PercentileMetrics, "percentile-metrics", g, `Comma-separated metrics to report percentiles of: "ttft", "tpot", "itl", "e2el". Default "ttft,tpot,itl".`)
	p.stringVar(&a.MetricPercentiles, "metric-percentiles", "99", g, "Comma-separated percentiles.")
	p.listVar(&a.Goodput, "goodput", nargsMany, "KEY:VALUE", g, "Goodput SLOs in milliseconds (ttft, tpot, e2el).")
	p.optStringVar(&a.Report, "report", g, "Write a self-contained HTML report to this file.")
	p.boolVar(&a.NoPlot, "no-plot", g, "Do not print the terminal plots.")
	p.positionals = &a.Files
	p.usageArgs = "RESULT.json"
	return p
}

// runReport re-summarises a detailed result file.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate report"
	a := &reportArgs{}
	p := newReportParser(a)
	if wantsHelp(args) {
		p.writeHelp(stdout, reportSummary)
		return 0
	}
	if err := p.parse(args); err != nil {
		return exitCode(prog, err, stderr)
	}
	if len(a.Files) != 1 {
		return exitCode(prog, usagef("want one result file, got %d", len(a.Files)), stderr)
	}
	return exitCode(prog, a.render(stdout), stderr)
}

// savedRun is the run header of a result file.
type savedRun struct {
	Date           string  `json:"date"`
	Backend        string  `json:"backend"`
	Label          *string `json:"label"`
	ModelID        string  `json:"model_id"`
	RequestRate    any     `json:"request_rate"`
	MaxConcurrency *int    `json:"max_concurrency"`
}

func (a *reportArgs) render(stdout io.Writer) error {
	// Check the flags before reading: their errors do not depend on the file.
	if _, _, err := parsePercentileFlags(a.PercentileMetrics, a.MetricPercentiles, false); err != nil {
		return err
	}
	goodput, err := parseGoodput(a.Goodput)
	if err != nil {
		return err
	}
	path := a.Files[0]
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read result: %w", err)
	}
	records, duration, err := metrics.RecordsFromResult(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var run savedRun
	readable, nonFinite := metrics.ReadablePyJSON(data)
	if err := json.NewDecoder(bytes.NewReader(readable)).Decode(&run); err != nil {
		return fmt.Errorf("%s: read result: %w", path, err)
	}
	plan := &benchPlan{Pooling: client.IsPooling(run.Backend), Goodput: goodput}
	if plan.PercentileMetrics, plan.Percentiles, err = parsePercentileFlags(a.PercentileMetrics, a.MetricPercentiles, plan.Pooling); err != nil {
		return err
	}
	sum := metrics.Summarize(records, duration, metrics.Options{
		PercentileMetrics: plan.PercentileMetrics, Percentiles: plan.Percentiles,
		Goodput: plan.Goodput, Pooling: plan.Pooling,
	})
	console := report.ConsoleSummary{Values: sum, Pooling: plan.Pooling, Goodput: len(plan.Goodput) > 0 && !plan.Pooling,
		PercentileMetrics: plan.PercentileMetrics, Percentiles: plan.Percentiles, RequestRate: math.Inf(1)}
	if r, ok := run.RequestRate.(float64); ok {
		console.RequestRate = r
	} else if word, ok := nonFinite["request_rate"]; ok {
		_ = metrics.UnmarshalFloat([]byte(word), &console.RequestRate)
	}
	if run.MaxConcurrency != nil {
		console.MaxConcurrency = *run.MaxConcurrency
	}
	if !a.NoPlot && !plan.Pooling {
		if err := report.WriteThroughputPlots(stdout, records); err != nil {
			return err
		}
	}
	if err := report.WriteConsoleSummary(stdout, console); err != nil {
		return err
	}
	if a.Report == nil {
		return nil
	}
	settings := []report.ReportSetting{{Name: "result file", Value: path}, {Name: "backend", Value: run.Backend},
		{Name: "model", Value: run.ModelID}, {Name: "date", Value: run.Date}}
	if run.Label != nil {
		settings = append(settings, report.ReportSetting{Name: "label", Value: *run.Label})
	}
	generated, _ := time.ParseInLocation("20060102-150405", run.Date, time.Local)
	if err := writeHTMLFile(*a.Report, report.HTMLReport{
		Title:     fmt.Sprintf("servegate report: %s (%s)", run.ModelID, path),
		Generated: generated,
		Settings:  settings,
		Records:   records,
		Summary:   console,
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "HTML report: %s\n", *a.Report)
	return nil
}
