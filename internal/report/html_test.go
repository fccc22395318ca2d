package report

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/internal/metrics"
)

var writeSample = flag.String("write-sample-report", "", "also write the sample HTML report to this file (for a screenshot)")

// sampleRun builds n records of a plausible run: Poisson arrivals at rate
// req/s, a few timeouts and HTTP 503s, and a concurrency-limited backlog
// late in the run.
func sampleRun(n int, rate float64) []metrics.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []metrics.Record
	at := 0.0
	for i := 0; i < n; i++ {
		at += rng.ExpFloat64() / rate
		lag := math.Abs(rng.NormFloat64()) * 0.4
		if i > n*2/3 {
			lag += float64(i-n*2/3) * 2 // backlog builds up
		}
		r := metrics.Record{
			RequestID: fmt.Sprintf("bench-1234abcd-%d", i),
			Scheduled: sec(at),
			Start:     sec(at + lag/1000),
			PromptLen: 512,
		}
		switch {
		case i%97 == 13:
			r.Failure, r.Error = metrics.FailureTimeout, "request timed out after 30s"
			r.Latency = 30 * time.Second
		case i%61 == 7:
			r.Failure, r.HTTPStatus, r.Error = metrics.FailureHTTPStatus, 503, "503 Service Unavailable: server overloaded"
		default:
			r.Success = true
			r.TTFT = sec(0.06 + math.Exp(rng.NormFloat64()*0.5)*0.05)
			total := r.TTFT
			for k := 0; k < 64; k++ {
				g := sec(0.018 + rng.ExpFloat64()*0.004)
				r.ITL = append(r.ITL, g)
				total += g
			}
			r.Latency = total
			r.OutputTokens = 65
		}
		recs = append(recs, r)
	}
	return recs
}

func sampleHTMLReport() HTMLReport {
	return HTMLReport{
		Title:     "servegate bench: llama-3-8b on inproc",
		Generated: time.Date(2026, 11, 29, 18, 30, 0, 0, time.UTC),
		Settings: []ReportSetting{
			{"target", "inproc"}, {"backend", "openai"}, {"model", "meta-llama/Meta-Llama-3-8B"},
			{"dataset", "random (input 512, output 64)"}, {"num prompts", "400"},
			{"request rate", "20 req/s (Poisson)"}, {"max concurrency", "32"},
		},
		Records: sampleRun(400, 20),
		Summary: ConsoleSummary{Values: sampleValues(), RequestRate: 20, MaxConcurrency: 32, Goodput: true},
		SLOs: []scenario.Verdict{
			{Bound: scenario.Bound{Metric: "p99_ttft_ms", Op: "<=", Value: 500}, Measured: 412.5, Found: true, Pass: true},
			{Bound: scenario.Bound{Metric: "failed", Op: "==", Value: 0}, Measured: 2, Found: true},
		},
	}
}

// renderHTML writes r's report and returns the page.
func renderHTML(t *testing.T, r HTMLReport) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteHTMLReport(&buf, r))
	return buf.String()
}

func TestWriteHTMLReport(t *testing.T) {
	page := renderHTML(t, sampleHTMLReport())
	if *writeSample != "" {
		require.NoError(t, os.WriteFile(*writeSample, []byte(page), 0o644))
	}
	for _, want := range []string{
		"<title>servegate bench: llama-3-8b on inproc</title>",
		"2026-11-29 18:30:00 UTC",
		"Serving benchmark result", "Successful requests:", "P99 TTFT (ms):",
		"Time to first token", "Inter-token latency", "End-to-end latency",
		"Output tokens per second", "Concurrent requests", "Schedule lag",
		"Failures by kind", "timeout", "http_status", "503 ×", "request timed out after 30s",
		"Configuration", "meta-llama/Meta-Llama-3-8B",
		"SLOs", "not met", `<td class="verdict FAIL">FAIL</td>`, `<td class="verdict PASS">PASS</td>`, "&lt;= 500",
	} {
		assert.Contains(t, page, want)
	}
	assert.Equal(t, 7, strings.Count(page, "<svg "), "three histograms, two time series, lag, failures")
	assert.Contains(t, page, `class="mark"`, "percentile markers on the histograms")
}

// TestHTMLReportIsSelfContained: nothing in the page may load at view time.
func TestHTMLReportIsSelfContained(t *testing.T) {
	page := renderHTML(t, sampleHTMLReport())
	for _, pat := range []string{`(?i)<script`, `(?i)<link`, `(?i)\ssrc=`, `(?i)\shref=`, `(?i)url\(`, `(?i)@import`} {
		assert.NotRegexp(t, regexp.MustCompile(pat), page)
	}
	// The only URL is the SVG namespace, which is a name, not a fetch.
	urls := regexp.MustCompile(`https?://[^"\s<]+`).FindAllString(page, -1)
	for _, u := range urls {
		assert.Equal(t, "http://www.w3.org/2000/svg", u)
	}
}

func TestHTMLReportEscapes(t *testing.T) {
	r := HTMLReport{
		Title:    `<script>alert(1)</script>`,
		Settings: []ReportSetting{{"label", `"><img src=x>`}},
		Records:  []metrics.Record{{RequestID: "r<1>", Failure: metrics.FailureStream, Error: "<b>boom</b>"}},
	}
	page := renderHTML(t, r)
	assert.NotContains(t, page, "<script>")
	assert.NotContains(t, page, "<img")
	assert.NotContains(t, page, "<b>boom")
	assert.Contains(t, page, "&lt;b&gt;boom&lt;/b&gt;")
}

func TestHTMLReportWithoutData(t *testing.T) {
	page := renderHTML(t, HTMLReport{})
	assert.Contains(t, page, "servegate benchmark report")
	assert.Contains(t, page, "no data.")
	assert.Contains(t, page, "No request failed.")
	assert.NotContains(t, page, "Serving benchmark result")
}

func TestHTMLReportMissingMetric(t *testing.T) {
	v := sampleValues()
	delete(v, "duration")
	err := WriteHTMLReport(&bytes.Buffer{}, HTMLReport{Summary: ConsoleSummary{Values: v}})
	require.ErrorContains(t, err, `"duration"`)
}

// BenchmarkWriteHTMLReport renders the report of a 10,000-request run and
// reports the page size.
func BenchmarkWriteHTMLReport(b *testing.B) {
	r := sampleHTMLReport()
	r.Records = sampleRun(10000, 50)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := WriteHTMLReport(&buf, r); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/1024, "KiB/page")
}

// A session run's report plots TTFT by turn position, with whole turn
// numbers on the x axis; a single-turn run's has no such plot.
func TestHTMLReportTurns(t *testing.T) {
	var recs []metrics.Record
	for turn := range 3 {
		recs = append(recs, metrics.Record{SessionID: "a", Turn: turn, Success: true, TTFT: time.Duration(10+turn) * time.Millisecond, Latency: 50 * time.Millisecond, OutputTokens: 4})
	}
	var b bytes.Buffer
	require.NoError(t, WriteHTMLReport(&b, HTMLReport{Records: recs}))
	page := b.String()
	i := strings.Index(page, `aria-label="TTFT by turn position"`)
	require.GreaterOrEqual(t, i, 0)
	svg := page[i : strings.Index(page[i:], "</svg>")+i]
	assert.Equal(t, 6, strings.Count(svg, `class="dot"`), "a median and a p99 point per turn")
	for _, tick := range []string{">1<", ">2<", ">3<"} {
		assert.Contains(t, svg, tick)
	}
	assert.NotContains(t, svg, ">1.5<")
	b.Reset()
	recs[0].SessionID, recs[1].SessionID, recs[2].SessionID = "", "", ""
	require.NoError(t, WriteHTMLReport(&b, HTMLReport{Records: recs}))
	assert.NotContains(t, b.String(), "TTFT by turn position")
}
