package report

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/capacity"
	"github.com/servegate/servegate/internal/metrics"
	"github.com/servegate/servegate/internal/redact"
	"github.com/servegate/servegate/internal/stats"
)

//go:embed htmlreport/report.html.tmpl htmlreport/report.css
var htmlReportFiles embed.FS

var htmlReportTemplate = template.Must(template.New("report.html.tmpl").ParseFS(htmlReportFiles, "htmlreport/report.html.tmpl"))

// An HTMLReport is what WriteHTMLReport renders: one run's records, its
// summary numbers and its configuration.
type HTMLReport struct {
	// Title heads the page. Default "servegate benchmark report".
	Title string
	// Generated is when the run ended; shown under the title when set.
	Generated time.Time
	// Settings is the run configuration, shown in this order.
	Settings []ReportSetting
	// Records are the run's per-request records.
	Records []metrics.Record
	// Summary is the console summary; the report shows the same block.
	// With nil Values the summary table is left out.
	Summary ConsoleSummary
	// SLOs are a scenario's verdicts, shown as a table when present;
	// harness limits (Verdict.Harness) are tagged, and when one broke the
	// SLO rows read VOID (the run is invalid).
	SLOs []scenario.Verdict
	// Capacity, when set, is the capacity search the run was the best
	// step of: p99 TTFT and goodput against the rate of every step.
	Capacity *capacity.Result
	// Server holds the server's metrics over the run (KV-cache use,
	// requests waiting and running), drawn beside the client's
	// concurrency.
	Server []ServerSeries
}

// A ReportSetting is one line of the report's configuration table.
type ReportSetting struct {
	Name, Value string
}

// WriteHTMLReport writes a self-contained HTML page: the summary, TTFT,
// ITL and end-to-end latency distributions, output tokens/s and
// concurrency over time, schedule lag, failures by kind and the run
// configuration. Charts are inline SVG and styles are inline: the page
// loads nothing at view time. Credentials in the title, settings and error
// examples are masked (see package redact).
func WriteHTMLReport(w io.Writer, r HTMLReport) error {
	page, err := buildHTMLPage(r)
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	if err := htmlReportTemplate.Execute(w, page); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// htmlPage is the template's data.
type htmlPage struct {
	Title, Generated string
	CSS              template.CSS
	Tiles            []htmlTile
	Summary          []summaryRow
	Capacity         []htmlFigure
	Latency          []htmlFigure
	OverTime         []htmlFigure
	Lag              htmlFigure
	LagStats         []ReportSetting
	Failures         htmlFigure
	FailureRows      []htmlFailure
	Settings         []ReportSetting
	SLOs             []htmlVerdict
	SLOsPassed       bool
}

type htmlVerdict struct{ Metric, Bound, Measured, Verdict string }

type htmlTile struct{ Label, Value, Class string }

type htmlFigure struct {
	Title, Caption string
	SVG            template.HTML
}

type htmlFailure struct {
	Kind          string
	Count         int
	Statuses      string
	ExampleID     string
	Example       string
	ExampleStatus int
}

func buildHTMLPage(r HTMLReport) (*htmlPage, error) {
	css, err := htmlReportFiles.ReadFile("htmlreport/report.css")
	if err != nil {
		return nil, err
	}
	p := &htmlPage{Title: redact.String(r.Title), CSS: template.CSS(css)}
	for _, s := range r.Settings { // a base URL may carry user:password
		p.Settings = append(p.Settings, ReportSetting{Name: s.Name, Value: redact.String(s.Value)})
	}
	if p.Title == "" {
		p.Title = "servegate benchmark report"
	}
	if !r.Generated.IsZero() {
		p.Generated = r.Generated.UTC().Format("2006-01-02 15:04:05 MST")
	}
	if r.Summary.Values != nil {
		rows, err := consoleRows(r.Summary)
		if err != nil {
			return nil, err
		}
		p.Summary = rows
		p.Tiles = summaryTiles(r.Summary.Values)
	}

	var ttft, itl, e2el []float64
	var okCount int
	for _, rec := range r.Records {
		if !rec.Success {
			continue
		}
		okCount++
		ttft = append(ttft, ms(rec.TTFT))
		e2el = append(e2el, ms(rec.Latency))
		for _, g := range rec.ITL {
			itl = append(itl, ms(g))
		}
	}
	marks := []percentileMark{{50, "p50", 0}, {90, "p90", 1}, {99, "p99", 2}}
	p.Latency = []htmlFigure{
		{Title: "Time to first token", Caption: fmt.Sprintf("%d successful requests", len(ttft)),
			SVG: histogramSVG("TTFT distribution", ttft, "TTFT (ms)", marks)},
		{Title: "Inter-token latency", Caption: fmt.Sprintf("%d gaps between output chunks", len(itl)),
			SVG: histogramSVG("ITL distribution", itl, "ITL (ms)", marks)},
		{Title: "End-to-end latency", Caption: fmt.Sprintf("%d successful requests", len(e2el)),
			SVG: histogramSVG("E2EL distribution", e2el, "E2EL (ms)", marks)},
	}
	if turns := metrics.TTFTByTurn(r.Records); turns != nil {
		n := 0
		for _, t := range turns {
			n += t.Stats.Count
		}
		p.Latency = append(p.Latency, htmlFigure{Title: "TTFT by turn position",
			Caption: fmt.Sprintf("median and p99 TTFT of the %d successful session requests at each user turn (tool rounds with their turn); later turns reuse the history's prefix", n),
			SVG:     turnsSVG("TTFT by turn position", turns)})
	}
	tokens, concurrent := PerSecondSeries(r.Records)
	p.OverTime = []htmlFigure{
		{Title: "Output tokens per second", Caption: "output chunks per one-second bucket, as vLLM counts them for its peak",
			SVG: lineSVG("Output tokens per second", tokens, "time since first request (s)", "tok/s")},
		{Title: "Concurrent requests", Caption: "requests in flight during each one-second bucket",
			SVG: lineSVG("Concurrent requests per second", concurrent, "time since first request (s)", "requests")},
	}
	p.OverTime = append(p.OverTime, serverFigures(r.Server, r.Records)...)
	p.Capacity = capacityFigures(r.Capacity)
	p.SLOsPassed = true
	inv := tableInvalid(r.SLOs)
	for _, v := range r.SLOs {
		word := verdictWord(v, inv)
		p.SLOsPassed = p.SLOsPassed && word == pass
		p.SLOs = append(p.SLOs, htmlVerdict{Metric: rowMetric(v), Bound: bound(v.Bound), Measured: FormatMeasured(v), Verdict: word})
	}
	p.Lag, p.LagStats = scheduleLag(r.Records)
	p.Failures, p.FailureRows = failuresByKind(r.Records)
	return p, nil
}

// summaryTiles picks the headline numbers.
func summaryTiles(v MetricValues) []htmlTile {
	get := func(name string) (float64, bool) { return v.Value(name) }
	var tiles []htmlTile
	add := func(label, name, format, class string) {
		if x, ok := get(name); ok && !math.IsNaN(x) {
			tiles = append(tiles, htmlTile{Label: label, Value: fmt.Sprintf(format, x), Class: class})
		}
	}
	add("successful requests", "completed", "%.0f", "")
	if f, ok := get("failed"); ok && f > 0 {
		add("failed requests", "failed", "%.0f", "bad")
	} else {
		add("failed requests", "failed", "%.0f", "good")
	}
	add("duration (s)", "duration", "%.2f", "")
	add("requests/s", "request_throughput", "%.2f", "")
	add("output tok/s", "output_throughput", "%.1f", "")
	add("median TTFT (ms)", "median_ttft_ms", "%.1f", "")
	add("P99 TTFT (ms)", "p99_ttft_ms", "%.1f", "")
	add("median ITL (ms)", "median_itl_ms", "%.1f", "")
	return tiles
}

// scheduleLag plots how late each request left against its slot in the
// arrival schedule: a lag that grows means the client or the concurrency
// limit held requests back.
func scheduleLag(records []metrics.Record) (htmlFigure, []ReportSetting) {
	var xs, lags []float64
	for _, rec := range records {
		if rec.Unsent {
			continue
		}
		xs = append(xs, rec.Scheduled.Seconds())
		lags = append(lags, ms(rec.Start-rec.Scheduled))
	}
	fig := htmlFigure{Title: "Schedule lag",
		Caption: "send time minus the arrival schedule's time, per request",
		SVG:     scatterSVG("Schedule lag", xs, lags, "scheduled send time (s)", "lag (ms)")}
	if len(lags) == 0 {
		return fig, nil
	}
	sorted := append([]float64(nil), lags...)
	sort.Float64s(sorted)
	rows := []ReportSetting{
		{"mean", fmt.Sprintf("%.2f ms", stats.Mean(lags))},
		{"median", fmt.Sprintf("%.2f ms", stats.MedianSorted(sorted))},
		{"P99", fmt.Sprintf("%.2f ms", stats.QuantileSorted(sorted, 0.99))},
		{"max", fmt.Sprintf("%.2f ms", sorted[len(sorted)-1])},
	}
	return fig, rows
}

// failuresByKind counts failed requests by kind, most frequent first, with
// the statuses seen and one example error.
func failuresByKind(records []metrics.Record) (htmlFigure, []htmlFailure) {
	byKind := map[string]*htmlFailure{}
	statuses := map[string]map[int]int{}
	for _, rec := range records {
		if rec.Success {
			continue
		}
		kind := string(rec.Failure)
		switch {
		case rec.Unsent:
			kind = "unsent (run stopped)"
		case kind == "":
			kind = "unclassified"
		}
		f := byKind[kind]
		if f == nil {
			f = &htmlFailure{Kind: kind, ExampleID: rec.RequestID, Example: truncate(redact.String(rec.Error), 400), ExampleStatus: rec.HTTPStatus}
			byKind[kind] = f
			statuses[kind] = map[int]int{}
		}
		f.Count++
		if rec.HTTPStatus != 0 {
			statuses[kind][rec.HTTPStatus]++
		}
	}
	var rows []htmlFailure
	for kind, f := range byKind {
		var codes []int
		for c := range statuses[kind] {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		for i, c := range codes {
			if i > 0 {
				f.Statuses += ", "
			}
			f.Statuses += fmt.Sprintf("%d ×%d", c, statuses[kind][c])
		}
		rows = append(rows, *f)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Count != rows[j].Count {
			return rows[i].Count > rows[j].Count
		}
		return rows[i].Kind < rows[j].Kind
	})
	labels := make([]string, len(rows))
	counts := make([]int, len(rows))
	for i, f := range rows {
		labels[i], counts[i] = f.Kind, f.Count
	}
	fig := htmlFigure{Title: "Failures by kind", SVG: barsSVG("Failures by kind", labels, counts)}
	if len(rows) == 0 {
		fig.SVG = `<p class="empty good">No request failed.</p>`
	}
	return fig, rows
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
