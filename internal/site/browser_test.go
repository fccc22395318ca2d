package site

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	screenshot     = flag.String("screenshot", "", "write the screenshot of the step scenario's page to this PNG `file` (docs/history-screenshot.png)")
	screenshotPage = flag.String("screenshot-page", "", "with -screenshot: shoot this existing site `page` instead (make history-demo's out/history-demo/site/scenario-history-demo.html)")
)

// chromium returns the Chromium executable, or skips the test with the
// reason; SERVEGATE_REQUIRE_CHROMIUM=1 (CI) makes a missing Chromium a
// failure instead.
func chromium(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{os.Getenv("SERVEGATE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	why := "no chromium executable on PATH (Debian: apt-get install chromium; or set SERVEGATE_CHROMIUM)"
	if os.Getenv("SERVEGATE_REQUIRE_CHROMIUM") == "1" {
		tb.Fatalf("SERVEGATE_REQUIRE_CHROMIUM=1 but %s", why)
	}
	tb.Skip(why)
	return ""
}

// A browser is a headless Chromium tab that records every request it
// makes and every console error.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	requests []string
	errors   []string
}

func newBrowser(tb testing.TB) *browser {
	tb.Helper()
	exe := chromium(tb)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1040, 900),
	}
	b := &browser{}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.record))
	ctx, cancelTime := context.WithTimeout(ctx, 5*time.Minute)
	tb.Cleanup(func() { cancelTime(); cancel(); cancelAlloc() })
	b.ctx = ctx
	require.NoError(tb, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start chromium")
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	require.NoError(tb, err)
	_, err = chromedp.Call(ctx, log.Enable, cdp.Empty{})
	require.NoError(tb, err)
	return b
}

// record keeps the events the test checks. It runs in the tab's loop:
// it only appends under the lock.
func (b *browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			b.errors = append(b.errors, fmt.Sprintf("console.%s", ev.Type))
		}
	case *runtime.EventExceptionThrown:
		b.errors = append(b.errors, "exception: "+ev.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			b.errors = append(b.errors, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
		}
	}
}

// offPage returns the requests that left the page: any but those to the
// site's own origin and data: URLs.
func (b *browser) offPage(origin string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, r := range b.requests {
		if !strings.HasPrefix(r, origin+"/") && !strings.HasPrefix(r, "data:") {
			out = append(out, r)
		}
	}
	return out
}

func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// chartState is what the page's charts show, as the browser laid them
// out.
type chartState struct {
	ID      string  `json:"id"`
	Points  int     `json:"points"`  // data-points
	Circles int     `json:"circles"` // drawn points with a size
	Changes int     `json:"changes"` // data-changes
	Markers int     `json:"markers"` // drawn change markers
	Width   float64 `json:"width"`
	Height  float64 `json:"height"`
	Labels  string  `json:"labels"` // the change markers' texts
}

const chartsJS = `[...document.querySelectorAll('svg.chart')].map(s => {
  const r = s.getBoundingClientRect();
  // A point has an area; a vertical marker line has a height only.
  const drawn = sel => [...s.querySelectorAll(sel)].filter(e => {
    const b = e.getBoundingClientRect(), st = getComputedStyle(e);
    return (b.width > 0 || b.height > 0) && st.visibility !== 'hidden' && st.display !== 'none' && (e.tagName !== 'line' || st.stroke !== 'none');
  });
  return {id: s.closest('section').id, points: +s.dataset.points, changes: +s.dataset.changes,
    circles: drawn('circle.pt').length, markers: drawn('g.change line').length, width: r.width, height: r.height,
    labels: [...s.querySelectorAll('g.change text')].map(t => t.textContent).join(' | ')};
})`

// charts loads a page and returns its charts and the load time (the
// navigation timing's loadEventEnd, ms).
func (b *browser) charts(tb testing.TB, pageURL string) ([]chartState, float64) {
	tb.Helper()
	require.NoError(tb, chromedp.Do(b.ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("body")), pageURL)
	charts, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]chartState](chartsJS))
	require.NoError(tb, err, pageURL)
	loadMS, err := chromedp.Run(b.ctx, chromedp.Evaluate[float64](`performance.getEntriesByType('navigation')[0].loadEventEnd`))
	require.NoError(tb, err, pageURL)
	return charts, loadMS
}

// TestSiteInChromium renders a site in headless Chromium: every chart
// draws all its points and its change markers, the step scenario's TTFT
// chart marks the step, no request leaves the page and the console
// shows no error.
func TestSiteInChromium(t *testing.T) {
	b := newBrowser(t)
	st := synth{scenarios: 3, commits: 40, stepAt: 25, step: 0.20, stepScenarios: 1}.build(t, filepath.Join(t.TempDir(), "store"))
	out := filepath.Join(t.TempDir(), "site")
	// Commit links point at the same local server: following one must
	// not leave the machine either.
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	sum, err := Write(context.Background(), Config{Store: st, Out: out, CommitURL: srv.URL + "/commit/{commit}"})
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(b.ctx, chromedp.Navigate(srv.URL+"/index.html"), chromedp.WaitReady("table")))
	idx, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]map[string]any](`[...document.querySelectorAll('tr')].slice(1).map(r => ({scenario: r.cells[0].innerText, verdict: r.cells[1].innerText, shift: r.cells[2].innerText}))`))
	require.NoError(t, err)
	require.Len(t, idx, 3)
	assert.Equal(t, "regression", idx[0]["verdict"])
	assert.Regexp(t, `^ttft-p99-sec \+(19|20|21)\.\d% at `, idx[0]["shift"])

	total := 0
	for _, p := range sum.Pages {
		if p == "index.html" {
			continue
		}
		charts, _ := b.charts(t, srv.URL+"/"+p)
		require.Len(t, charts, 3, p)
		for _, c := range charts {
			total++
			assert.Positive(t, c.Width, "%s: chart not laid out", c.ID)
			assert.Positive(t, c.Height, "%s: chart not laid out", c.ID)
			assert.Equal(t, 40, c.Points, c.ID)
			assert.Equal(t, c.Points, c.Circles, "%s: points not drawn", c.ID)
			assert.Equal(t, c.Changes, c.Markers, "%s: change markers not drawn", c.ID)
			if c.ID == ChartID("cpu4", "Scenarios/scenario=scn-00", "ttft-p99-sec") {
				assert.GreaterOrEqual(t, c.Markers, 1, "the step is not marked")
				assert.Regexp(t, `\+(19|20|21)\.\d% regression`, c.Labels)
			}
		}
	}
	assert.Equal(t, sum.Charts, total)
	// A commit link stays on the machine too.
	require.NoError(t, chromedp.Do(b.ctx, chromedp.Navigate(srv.URL+"/"+PageName("scn-00")), chromedp.WaitReady("svg"),
		chromedp.Click(`svg.chart a circle`, chromedp.NodeVisible)))
	time.Sleep(200 * time.Millisecond) // the click's navigation starts asynchronously
	u, _ := url.Parse(srv.URL)
	assert.Empty(t, b.offPage(u.Scheme+"://"+u.Host), "requests that left the page")
	// The followed commit link 404s on the test server, which Chromium
	// logs: only errors before it count.
	errs := b.consoleErrors()
	for _, e := range errs {
		if !strings.Contains(e, "/commit/") && !strings.Contains(e, "404") {
			t.Errorf("console: %s", e)
		}
	}
	// The screenshot last: -screenshot-page serves another origin.
	if *screenshot != "" {
		page := srv.URL + "/" + PageName("scn-00")
		if *screenshotPage != "" {
			abs, err := filepath.Abs(*screenshotPage)
			require.NoError(t, err)
			other := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(abs))))
			defer other.Close()
			page = other.URL + "/" + filepath.Base(abs)
		}
		require.NoError(t, chromedp.Do(b.ctx, chromedp.Navigate(page), chromedp.WaitReady("svg")))
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(*screenshot, png, 0o644))
	}
}

// TestSiteScale measures the site of 1000 commits × 20 scenarios: the
// page weight and the load time in headless Chromium, and checks that
// every chart still draws all its points. Minutes of set-up, so it runs
// only with SERVEGATE_SITE_SCALE=1:
//
//	SERVEGATE_SITE_SCALE=1 go test ./internal/site/ -run Scale -v
func TestSiteScale(t *testing.T) {
	if os.Getenv("SERVEGATE_SITE_SCALE") != "1" {
		t.Skip("a measurement (1000 commits × 20 scenarios, minutes): set SERVEGATE_SITE_SCALE=1")
	}
	b := newBrowser(t)
	const commits, scenarios = 1000, 20
	start := time.Now()
	st := synth{scenarios: scenarios, commits: commits, stepAt: 900, step: 0.20, stepScenarios: 1}.build(t, filepath.Join(t.TempDir(), "store"))
	t.Logf("store of %d commits × %d scenarios built in %s", commits, scenarios, time.Since(start).Round(time.Millisecond))
	out := filepath.Join(t.TempDir(), "site")
	start = time.Now()
	sum, err := Write(context.Background(), Config{Store: st, Out: out, CommitURL: "https://github.com/OWNER/REPO/commit/{commit}"})
	require.NoError(t, err)
	t.Logf("site written in %s: %d pages, %d charts, %d points, %d bytes", time.Since(start).Round(time.Millisecond), len(sum.Pages), sum.Charts, sum.Points, sum.Bytes)
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	var loads []float64
	var biggest, biggestGz int64
	for _, p := range sum.Pages {
		info, err := os.Stat(filepath.Join(out, p))
		require.NoError(t, err)
		biggest = max(biggest, info.Size())
		biggestGz = max(biggestGz, gzipSize(t, filepath.Join(out, p)))
		if p == "index.html" {
			continue
		}
		charts, load := b.charts(t, srv.URL+"/"+p)
		loads = append(loads, load)
		for _, c := range charts {
			assert.Equal(t, commits, c.Circles, c.ID)
			assert.Equal(t, c.Changes, c.Markers, c.ID)
		}
		if p == PageName("scn-00") {
			for _, c := range charts {
				if c.ID == ChartID("cpu4", "Scenarios/scenario=scn-00", "ttft-p99-sec") {
					assert.Regexp(t, `\+(19|20|21)\.\d% regression`, c.Labels, "the 20% step at 1000 commits (past the 15% tolerance of p99 TTFT)")
				}
			}
		}
	}
	slices.Sort(loads)
	t.Logf("scenario page: largest %d bytes (%d gzipped); load (navigation loadEventEnd) median %.0f ms, max %.0f ms over %d pages; load average %s",
		biggest, biggestGz, loads[len(loads)/2], loads[len(loads)-1], len(loads), loadAverage())
	assert.Empty(t, b.offPage(srv.URL), "requests that left the page")
	assert.Empty(t, b.consoleErrors())
}

func gzipSize(tb testing.TB, name string) int64 {
	tb.Helper()
	data, err := os.ReadFile(name)
	require.NoError(tb, err)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(data)
	require.NoError(tb, w.Close())
	return int64(buf.Len())
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
