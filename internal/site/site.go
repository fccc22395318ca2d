// Package site writes the static dashboard of a results store
// (internal/store): an overview of every scenario with its latest verdict
// and its largest open shift, and one page per scenario with one chart
// per gated unit and runner type.
//
// The charts are inline SVG written here, with no script at all: a page
// fetches nothing (no vendored library to audit or update, nothing a
// content security policy must allow), renders with scripts off, opens
// from disk as from GitHub Pages, and each point's tooltip is the SVG
// <title> the browser shows on hover.
package site

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/store"
)

// DefaultWindow is how many of the newest commits change points are
// searched in by default.
const DefaultWindow = 200

// A Config says what Write writes.
type Config struct {
	// Store is the results store read.
	Store *store.Store
	// Out is the directory the site is written to (created; its
	// index.html and scenario pages are replaced).
	Out string
	// Policy says which units are gated (charted); nil means the gate's
	// default policy.
	Policy *gate.Policy
	// Alpha is the change points' significance level; 0 means the
	// change-point gate's default (0.01).
	Alpha float64
	// Window is how many of each runner type's newest commits change
	// points are searched in; 0 means DefaultWindow, at most 500.
	Window int
	// CommitURL makes a commit's link from the template: "{commit}" is
	// replaced by the commit hash
	// ("https://github.com/OWNER/REPO/commit/{commit}"). "" leaves the
	// points unlinked.
	CommitURL string
	// Title heads every page; "" means "servegate history".
	Title string
}

// A Summary says what Write wrote.
type Summary struct {
	// Pages are the files written, relative to Out.
	Pages []string
	// Bytes is the total size of the pages.
	Bytes int64
	// Charts and Points count the charts and their points.
	Charts, Points int
	// Notes are the history's notes (commits left out and why).
	Notes []string
}

// A scenarioPage collects one scenario's series over runner types.
type scenarioPage struct {
	name   string
	series []runnerSeries
}

type runnerSeries struct {
	runner string
	times  map[string]time.Time
	s      *gate.HistorySeries
}

// Write reads the store and writes the site. A store without runs, or
// one the change-point gate cannot read (a torn file, say), is an error and
// nothing is written.
func Write(ctx context.Context, cfg Config) (*Summary, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("site: no store")
	}
	runners, err := cfg.Store.Runners()
	if err != nil {
		return nil, fmt.Errorf("site: %w", err)
	}
	sum := &Summary{}
	pages := map[string]*scenarioPage{}
	for _, runner := range runners {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("site: %w", err)
		}
		rep, err := gate.RunChangePointsStore(cfg.Store, gate.ChangePointOptions{Runner: runner, Policy: cfg.Policy, Alpha: cfg.Alpha, Window: cmp.Or(cfg.Window, DefaultWindow)})
		if rep == nil {
			return nil, fmt.Errorf("site: %w", err)
		}
		// A history too short to analyse still draws its points.
		times := map[string]time.Time{}
		for i, t := range rep.CommitTimes {
			times[rep.Commits[i]] = t
		}
		for _, n := range rep.Notes {
			sum.Notes = append(sum.Notes, runner+": "+n)
		}
		for _, s := range rep.Series {
			name := Scenario(s.Benchmark)
			p := pages[name]
			if p == nil {
				p = &scenarioPage{name: name}
				pages[name] = p
			}
			p.series = append(p.series, runnerSeries{runner: runner, times: times, s: s})
		}
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("site: %s holds no result of a gated unit to chart", cfg.Store.Dir)
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("site: %w", err)
	}
	commitURL := func(c string) string {
		if cfg.CommitURL == "" {
			return ""
		}
		return strings.ReplaceAll(cfg.CommitURL, "{commit}", c)
	}
	title := cmp.Or(cfg.Title, "servegate history")
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range pages {
			if !yield(n) {
				return
			}
		}
	})
	// One page per scenario: two names whose slugs meet (short hashes
	// that collide) are refused, never written over each other.
	byPage := map[string]string{}
	for _, name := range names {
		if other, ok := byPage[PageName(name)]; ok {
			return nil, fmt.Errorf("site: scenarios %q and %q would share the page %s: rename one", other, name, PageName(name))
		}
		byPage[PageName(name)] = name
	}
	var rows []overviewRow
	for _, name := range names {
		p := pages[name]
		var b strings.Builder
		writeScenarioPage(&b, title, p, commitURL)
		if err := writePage(cfg.Out, PageName(name), b.String(), sum); err != nil {
			return nil, err
		}
		for _, rs := range p.series {
			sum.Charts++
			sum.Points += len(rs.s.Values)
		}
		rows = append(rows, overview(p))
	}
	var b strings.Builder
	writeOverview(&b, title, rows, sum.Notes)
	if err := writePage(cfg.Out, "index.html", b.String(), sum); err != nil {
		return nil, err
	}
	return sum, nil
}

func writePage(dir, name, body string, sum *Summary) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("site: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(body); err != nil {
		tmp.Close()
		return fmt.Errorf("site: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("site: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("site: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("site: %w", err)
	}
	sum.Pages = append(sum.Pages, name)
	sum.Bytes += int64(len(body))
	return nil
}

// Scenario is the scenario a benchmark measures: the value of its
// "scenario=" name part (servegate's scenario benchmarks), else the
// benchmark's full name.
func Scenario(benchmark string) string {
	for _, part := range strings.Split(benchmark, "/") {
		if v, ok := strings.CutPrefix(part, "scenario="); ok && v != "" {
			return v
		}
	}
	return benchmark
}

// PageName is the file name of a scenario's page.
func PageName(scenario string) string {
	return "scenario-" + slug(scenario) + ".html"
}

// ChartID is the HTML id of a series' chart on its scenario's page:
// ChartURL's fragment.
func ChartID(runner, benchmark, unit string) string {
	return "chart-" + slug(runner+"-"+unit+"-"+benchmark)
}

// ChartURL is the link to a series' chart under the site's base URL.
func ChartURL(base, runner, benchmark, unit string) string {
	return strings.TrimRight(base, "/") + "/" + PageName(Scenario(benchmark)) + "#" + ChartID(runner, benchmark, unit)
}

// hashedSlug is how the slug of a changed name ends.
var hashedSlug = regexp.MustCompile(`-[0-9a-f]{6}$`)

// slug turns a name into [a-z0-9._-] characters. A name that changed on
// the way gets a short hash of itself, and so does a name that ends as
// such a slug does ("chat-460b3a", the slug of "Chat"): a name kept as it
// is never meets a changed one. Two changed names meet only when their
// short hashes do; Write refuses that.
func slug(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 80 {
		s = s[:80]
	}
	if s != name || hashedSlug.MatchString(s) {
		h := sha256.Sum256([]byte(name))
		s += "-" + hex.EncodeToString(h[:3])
	}
	return s
}

// An overviewRow is one scenario on the overview.
type overviewRow struct {
	name, verdict string
	commits       int
	last          string
	// shift is the largest open shift: the newest change point of a
	// series (one that main still carries), largest in size.
	shift    *gate.ChangePoint
	shiftOf  runnerSeries
	analysed bool
}

func overview(p *scenarioPage) overviewRow {
	r := overviewRow{name: p.name, verdict: "pass"}
	for _, rs := range p.series {
		s := rs.s
		r.commits = max(r.commits, len(s.Values))
		if n := len(s.Commits); n > 0 {
			r.last = s.Commits[n-1]
		}
		if s.Skipped != "" {
			continue
		}
		r.analysed = true
		n := len(s.Changes)
		if n == 0 {
			continue
		}
		c := s.Changes[n-1]
		if c.Kind == "regression" {
			r.verdict = "regression"
		}
		if r.shift == nil || math.Abs(c.Change) > math.Abs(r.shift.Change) {
			r.shift, r.shiftOf = c, rs
		}
	}
	if !r.analysed {
		r.verdict = "cannot tell"
	}
	return r
}

const style = `<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#212121;max-width:1000px}
h1{font-size:20px}h2{font-size:17px;margin-top:28px}h3{font-size:15px;margin:18px 0 2px}
table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #e0e0e0;text-align:left}
.regression{color:#c62828;font-weight:600}.improvement{color:#2e7d32}.pass{color:#2e7d32}.cannot{color:#8d6e00}
.key{color:#616161;font-size:12px;margin:2px 0 4px}
.chart{display:block;max-width:100%;height:auto;background:#fff}
.chart .gridline{stroke:#eee}.chart .tick,.chart .axis{font-size:11px;fill:#616161}
.chart .band{fill:#90caf9;opacity:.45}.chart .median{fill:none;stroke:#1565c0;stroke-width:1.2}
.chart .pt{fill:#1565c0}.chart a:hover .pt{fill:#ff6f00;r:5}
.chart .level{stroke:#212121;stroke-width:1.5;stroke-dasharray:5 3}
.chart .change line{stroke-width:2}.chart .change text{font-size:12px;font-weight:600}
.chart .unsearched{fill:#f5f5f5}
</style>`

func writeOverview(b *strings.Builder, title string, rows []overviewRow, notes []string) {
	fmt.Fprintf(b, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><title>%s</title>%s</head><body>\n", html.EscapeString(title), style)
	fmt.Fprintf(b, "<h1>%s</h1>\n<p>Each scenario's latest verdict (regression: a gated unit's newest persistent shift is worse than its tolerance, so main still carries it) and its largest open shift (the newest change point of a unit, largest in size).</p>\n", html.EscapeString(title))
	b.WriteString("<table><tr><th>scenario</th><th>latest verdict</th><th>largest open shift</th><th>commits</th><th>newest</th></tr>\n")
	for _, r := range rows {
		class := strings.Fields(r.verdict)[0]
		shift := "none"
		if r.shift != nil {
			s := r.shiftOf.s
			shift = fmt.Sprintf(`<a href="%s#%s">%s %s at %s</a> <span class="%s">(%s)</span>`, PageName(r.name), ChartID(r.shiftOf.runner, s.Benchmark, s.Unit),
				html.EscapeString(s.Unit), pct(r.shift.Change), html.EscapeString(shortCommit(r.shift.Commit)), strings.Fields(r.shift.Kind)[0], html.EscapeString(r.shift.Kind))
		}
		fmt.Fprintf(b, `<tr><td><a href="%s">%s</a></td><td class="%s">%s</td><td>%s</td><td>%d</td><td>%s</td></tr>`+"\n",
			PageName(r.name), html.EscapeString(r.name), class, html.EscapeString(r.verdict), shift, r.commits, html.EscapeString(shortCommit(r.last)))
	}
	b.WriteString("</table>\n")
	if len(notes) > 0 {
		b.WriteString("<h2>Notes</h2><ul>\n")
		for _, n := range notes {
			fmt.Fprintf(b, "<li>%s</li>\n", html.EscapeString(n))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
}

func writeScenarioPage(b *strings.Builder, title string, p *scenarioPage, commitURL func(string) string) {
	fmt.Fprintf(b, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><title>%s · %s</title>%s</head><body>\n", html.EscapeString(p.name), html.EscapeString(title), style)
	fmt.Fprintf(b, "<p><a href=\"index.html\">← all scenarios</a></p><h1>%s</h1>\n", html.EscapeString(p.name))
	b.WriteString(`<p class="key">Blue points: each commit's median (hover for the commit, click to open it); blue band: the smallest to the largest run of the commit; black dashes: the level between change points; a vertical line: a change point found by E-divisive means, labelled with its shift and red when worse than the tolerance, green when better. The y axis spans the data, not zero.</p>` + "\n")
	runner := ""
	for _, rs := range p.series {
		s := rs.s
		if rs.runner != runner {
			runner = rs.runner
			fmt.Fprintf(b, "<h2>runner %s</h2>\n", html.EscapeString(runner))
		}
		fmt.Fprintf(b, `<section id="%s"><h3>%s <small>(%s is better, tolerance %s)</small></h3>`, ChartID(rs.runner, s.Benchmark, s.Unit),
			html.EscapeString(s.Unit), html.EscapeString(s.Better), html.EscapeString(s.Tolerance))
		fmt.Fprintf(b, `<p class="key">%s · %d commits · %s</p>`, html.EscapeString(s.Benchmark), len(s.Values), status(s))
		seriesChart(b, s, rs.times, commitURL)
		b.WriteString("</section>\n")
	}
	b.WriteString("</body></html>\n")
}

// status is a series' state in words.
func status(s *gate.HistorySeries) string {
	if s.Skipped != "" {
		return "not analysed: " + html.EscapeString(s.Skipped)
	}
	n := len(s.Changes)
	if n == 0 {
		return "no persistent shift"
	}
	c := s.Changes[n-1]
	return fmt.Sprintf(`<span class="%s">open shift %s at %s (%s, p=%.3f)</span>`, strings.Fields(c.Kind)[0], pct(c.Change), html.EscapeString(shortCommit(c.Commit)), html.EscapeString(c.Kind), c.P)
}
