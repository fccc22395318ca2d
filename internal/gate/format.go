package gate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchunit"

	"github.com/servegate/servegate/internal/mdsafe"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// WriteText writes a benchstat-like table per file configuration and
// unit, with a gate column for gated units, then the verdict.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	var prevConfig []KeyValue
	for i := 0; i < len(r.Comparisons); {
		j := i
		for j < len(r.Comparisons) && sameTable(r.Comparisons[i], r.Comparisons[j]) {
			j++
		}
		if i > 0 {
			b.WriteString("\n")
		}
		for _, kv := range r.Comparisons[i].Config {
			if value(prevConfig, kv.Key) != kv.Value || i == 0 {
				fmt.Fprintf(&b, "%s: %s\n", kv.Key, kv.Value)
			}
		}
		prevConfig = r.Comparisons[i].Config
		writeTextTable(&b, r.Comparisons[i:j])
		i = j
	}
	if len(r.Comparisons) > 0 {
		b.WriteString("\n")
	}
	_ = r.WriteServerMoves(&b)
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	b.WriteString(r.summaryLine() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func sameTable(a, b *Comparison) bool {
	if a.Unit != b.Unit || len(a.Config) != len(b.Config) {
		return false
	}
	for i := range a.Config {
		if a.Config[i] != b.Config[i] {
			return false
		}
	}
	return true
}

func value(kvs []KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

func writeTextTable(b *strings.Builder, rows []*Comparison) {
	first := rows[0]
	title := first.Unit
	if first.Gated {
		title += fmt.Sprintf(" (gated: %s is better, tolerance %s)", directionWord(first.Better), first.Tolerance)
	}
	cells := [][]string{{"", "base", "head", "vs base", ""}}
	if first.Gated {
		cells[0][4] = "gate"
	}
	var notes []string
	for _, c := range rows {
		base, head := cellText(c)
		gate := ""
		if c.Gated {
			gate = strings.ToUpper(string(c.Verdict)) + ": " + c.Reason
		}
		cells = append(cells, []string{c.Benchmark, base, head, vsBase(c), gate})
		for _, w := range c.Warnings {
			notes = appendUnique(notes, w)
		}
	}
	fmt.Fprintf(b, "%s\n", title)
	writeColumns(b, cells)
	for _, n := range notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
}

// cellText renders both sides of a row on a common scale, as benchstat
// does: "101.2m ± 2%".
func cellText(c *Comparison) (base, head string) {
	var centers []float64
	for _, s := range []*Sample{c.Base, c.Head} {
		if s != nil {
			centers = append(centers, s.Center)
		}
	}
	scaler := benchunit.CommonScale(centers, benchunit.ClassOf(c.Unit))
	render := func(s *Sample) string {
		if s == nil {
			return "-"
		}
		if c.Assume == "exact" {
			return scaler.Format(s.Center)
		}
		return scaler.Format(s.Center) + " ± " + s.Range
	}
	return render(c.Base), render(c.Head)
}

// vsBase renders the comparison as benchstat's "vs base" column:
// "~" when not significant, else the change, then "(p=0.000 n=10)". It
// shows benchstat's view, the unadjusted p; the gate column shows the
// Holm-adjusted one when the correction is on.
func vsBase(c *Comparison) string {
	if c.Base == nil || c.Head == nil {
		return ""
	}
	delta := "~"
	if c.P <= c.Alpha {
		delta = pct(c.Delta)
		if c.Delta == 0 {
			delta = "0.00%"
		}
	}
	p := ""
	if c.P != 0 {
		p = fmt.Sprintf("p=%0.3f ", c.P)
	}
	n := fmt.Sprintf("n=%d", c.Base.N)
	if c.Base.N != c.Head.N {
		n = fmt.Sprintf("n=%d+%d", c.Base.N, c.Head.N)
	}
	return fmt.Sprintf("%s (%s%s)", delta, p, n)
}

func writeColumns(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, s := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, s := range r {
			line.WriteString(s)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s)+2))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// summaryLine is the last line of the text output.
func (r *Report) summaryLine() string {
	gated, failed := 0, 0
	for _, c := range r.Comparisons {
		if c.Gated {
			gated++
		}
		if c.Verdict == Fail {
			failed++
		}
	}
	holm := "off"
	if r.Holm {
		holm = "on"
	}
	settings := fmt.Sprintf("%d gated comparisons, alpha %v, Holm–Bonferroni %s", gated, r.Alpha, holm)
	switch r.Verdict {
	case Pass:
		return "gate: PASS (" + settings + ")"
	case Fail:
		return fmt.Sprintf("gate: FAIL: %d regression(s) (%s)", failed, settings)
	}
	return fmt.Sprintf("gate: ERROR: %d problem(s) prevent a verdict (%s)", len(r.Errors), settings)
}

// verdictIcons mark verdicts in the Markdown report.
var verdictIcons = map[Verdict]string{Pass: "✅", Fail: "❌", Error: "⚠️"}

// WriteMarkdown writes the report for a pull request comment or
// $GITHUB_STEP_SUMMARY: the verdict, the gated rows, and every other
// row in a collapsed section.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s servegate gate: %s\n\n", verdictIcons[r.Verdict], strings.TrimPrefix(r.summaryLine(), "gate: "))
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "- **error:** %s\n", mdsafe.Text(e))
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n")
	}
	var gated, other []*Comparison
	for _, c := range r.Comparisons {
		if c.Gated {
			gated = append(gated, c)
		} else {
			other = append(other, c)
		}
	}
	if len(gated) > 0 {
		writeMarkdownTable(&b, gated)
	}
	if len(other) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>Other metrics (%d rows, not gated)</summary>\n\n", len(other))
		writeMarkdownTable(&b, other)
		b.WriteString("\n</details>\n")
	}
	var moves strings.Builder
	_ = r.WriteServerMoves(&moves)
	if moves.Len() > 0 {
		b.WriteString("\n")
		for _, l := range strings.Split(strings.TrimRight(moves.String(), "\n"), "\n") {
			fmt.Fprintf(&b, "- %s\n", mdsafe.Text(l))
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "\n> warning: %s\n", mdsafe.Text(warn))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdownTable(b *strings.Builder, rows []*Comparison) {
	b.WriteString("| benchmark | config | unit | base | head | vs base | verdict |\n")
	b.WriteString("| --- | --- | --- | ---: | ---: | --- | --- |\n")
	for _, c := range rows {
		base, head := cellText(c)
		var cfg []string
		for _, kv := range c.Config {
			if kv.Key == "goos" || kv.Key == "goarch" || kv.Key == "cpu" || kv.Key == "pkg" {
				continue
			}
			cfg = append(cfg, kv.Key+"="+kv.Value)
		}
		unit := mdsafe.Cell(c.Unit)
		verdict := ""
		if c.Gated {
			unit += " (" + c.Tolerance.String() + ")"
			if icon := verdictIcons[c.Verdict]; icon != "" {
				verdict = icon + " "
			}
			verdict += c.Reason
		}
		config := ""
		if len(cfg) > 0 {
			config = mdsafe.Cell(strings.Join(cfg, " "))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", mdsafe.Cell(c.Benchmark), config,
			unit, base, head, vsBase(c), mdEscape(verdict))
	}
}

// mdEscape keeps a table cell one cell. It is for text servegate writes;
// text that may hold a name from a pull request goes through mdsafe.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
