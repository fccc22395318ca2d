package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"
	"time"

	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/report"
	"github.com/servegate/servegate/internal/shard"
)

const mergeSummary = `Merge the detailed results of one run's shards (servegate bench --shard
i/N --start-at T --save-result --save-detailed, one file per shard) into one
vLLM result JSON and one console summary. Every request of the schedule
must be in exactly one file; token totals are the requests' sums and every
percentile is computed again from the merged per-request records. The
shards' start times are compared with --start-at: their spread is the
clock skew, reported, and a run whose skew exceeds --max-skew-ms is
invalid.

Exit status: 0 merged, 2 invalid (a shard missing, present twice or from
another run, a file unreadable, or the skew too large).`

// mergeArgs are the flags of servegate merge.
type mergeArgs struct {
	Output    string
	Shards    int
	MaxSkewMS float64
	Goodput   []string
	NoPlot    bool
	Files     []string
}

func newMergeParser(a *mergeArgs) *argParser {
	p := newArgParser("servegate merge")
	g := "options"
	p.stringVar(&a.Output, "output", "merged.json", g, "Write the merged detailed result JSON to this file.")
	p.intVar(&a.Shards, "shards", 0, g, "The number of shards expected (N); 0 takes it from the files. A missing shard is an error either way.")
	p.floatVar(&a.MaxSkewMS, "max-skew-ms", 100, g, "The largest spread of the shards' start times (ms) that still counts as one run.")
	p.listVar(&a.Goodput, "goodput", nargsMany, "KEY:VALUE", g, "The run's goodput SLOs in milliseconds (a result file does not record them); needed when the shards report goodput.")
	p.boolVar(&a.NoPlot, "no-plot", g, "Do not print the terminal plots.")
	p.positionals = &a.Files
	p.usageArgs = "SHARD.json..."
	return p
}

// runMerge merges shard results; invalid merges exit 2.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "servegate merge"
	a := &mergeArgs{}
	p := newMergeParser(a)
	if wantsHelp(args) {
		p.writeHelp(stdout, mergeSummary)
		return 0
	}
	if err := p.parse(args); err != nil {
		return exitCode(prog, err, stderr)
	}
	if len(a.Files) == 0 {
		return exitCode(prog, usagef("want the shards' result files"), stderr)
	}
	if err := a.merge(stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	return 0
}

func (a *mergeArgs) merge(stdout io.Writer) error {
	goodput, err := parseGoodput(a.Goodput)
	if err != nil {
		return err
	}
	if a.MaxSkewMS < 0 || math.IsNaN(a.MaxSkewMS) {
		return fmt.Errorf("--max-skew-ms must not be negative, got %s", metrics.PyFloat(a.MaxSkewMS))
	}
	parts := make([]shard.Part, len(a.Files))
	for i, f := range a.Files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read shard result: %w", err)
		}
		parts[i] = shard.Part{Name: f, Data: data}
	}
	m, err := shard.Merge(parts)
	if err != nil {
		return err
	}
	if n := len(m.Starts); a.Shards > 0 && n != a.Shards {
		return fmt.Errorf("the files are the %d shards of a %d-shard run, but --shards %d was expected", n, n, a.Shards)
	}
	sum, err := m.Summary(goodput)
	if err != nil {
		return err
	}
	if err := writeShardStarts(stdout, m); err != nil {
		return err
	}
	if !a.NoPlot && !sum.Options.Pooling {
		if err := report.WriteThroughputPlots(stdout, m.Records); err != nil {
			return err
		}
	}
	console := report.ConsoleSummary{Values: sum, Pooling: sum.Options.Pooling, Goodput: len(goodput) > 0 && !sum.Options.Pooling,
		PercentileMetrics: sum.Options.PercentileMetrics, Percentiles: sum.Options.Percentiles,
		RequestRate: m.Info.RequestRate, MaxConcurrency: m.Info.MaxConcurrency}
	if err := report.WriteConsoleSummary(stdout, console); err != nil {
		return err
	}
	if err := metrics.WriteResult(a.Output, sum.ResultJSON(m.Info, true), false); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Saved merged result: %s\n", a.Output)
	if limit := time.Duration(a.MaxSkewMS * float64(time.Millisecond)); m.Skew > limit {
		return fmt.Errorf("clock skew %s ms between the shards' starts exceeds --max-skew-ms %s: the shards did not run one schedule (the merged file is written, but the run is invalid)",
			metrics.PyFloat(ms(m.Skew)), metrics.PyFloat(a.MaxSkewMS))
	}
	return nil
}

// writeShardStarts prints each shard's start against --start-at and the
// skew between them.
func writeShardStarts(w io.Writer, m *shard.Merged) error {
	fmt.Fprintf(w, "Merged %d shards of %d requests, start time %s\n", len(m.Starts), len(m.Records), m.StartAt.UTC().Format(time.RFC3339Nano))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\trequests\tstarted (UTC)\tlate (ms)\tduration (s)\tfile")
	for _, s := range m.Starts {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%.3f\t%s\n", s.Shard, s.Requests, s.Start.UTC().Format("15:04:05.000000"), ms(s.Late), s.Duration.Seconds(), s.Name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Clock skew (latest start - earliest, each on its own clock): %.3f ms\n", ms(m.Skew))
	return err
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
