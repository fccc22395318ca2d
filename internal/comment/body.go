package comment

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/servegate/servegate/internal/gate"
	"github.com/servegate/servegate/internal/mdsafe"
	"github.com/servegate/servegate/internal/site"
)

// MaxBody is the longest comment GitHub takes (65536 characters), less
// room for the truncation note.
const MaxBody = 65000

// maxList is where the list of regressed units is cut, in bytes of the
// comment so far. Room is left for the gate's report.
const maxList = MaxBody / 2

// An Input is what the comment is made of.
type Input struct {
	// Markdown is the gate's Markdown report, included verbatim.
	Markdown string
	// JSON is the gate's JSON report, nil when the gate wrote none.
	JSON []byte
	// Exit is the gate's exit code.
	Exit int
	// SiteURL and Runner locate the dashboard's charts ("" for no links).
	SiteURL, Runner string
	// Marker is the hidden marker's id; "" means DefaultMarker.
	Marker string
}

// Body writes the comment. It holds the hidden marker, the verdict, the
// regressed units with their change, p-value, runs and chart, the number
// of runs, then the gate's Markdown report verbatim.
func Body(in Input) (string, error) {
	if in.Marker == "" {
		in.Marker = DefaultMarker
	}
	var b strings.Builder
	v := VerdictOf(in.Exit)
	b.WriteString(Marker(in.Marker) + "\n")
	fmt.Fprintf(&b, "## %s %s\n\n%s.\n\n", v.Icon, v.Title, upperFirst(v.Text))
	var rep *gate.Report
	if len(in.JSON) > 0 {
		rep = &gate.Report{}
		if err := json.Unmarshal(in.JSON, rep); err != nil {
			return "", fmt.Errorf("the gate's JSON report: %w", err)
		}
	}
	if rep != nil {
		writeRegressions(&b, rep, in)
		base, head := runs(rep)
		fmt.Fprintf(&b, "It took %d base and %d head run(s) per scenario", base, head)
		if in.SiteURL != "" {
			fmt.Fprintf(&b, "; the history of main is on the [dashboard](%s)", mdsafe.URL(in.SiteURL))
		}
		b.WriteString(".\n\n")
	}
	b.WriteString("<details open><summary>The gate's report</summary>\n\n")
	md := in.Markdown
	if room := MaxBody - b.Len() - 200; len(md) > room {
		md = cut(md, max(room, 0)) + "\n\n… (cut: the full report is in the job summary and the artifact)\n"
	}
	b.WriteString(md)
	if !strings.HasSuffix(md, "\n") {
		b.WriteString("\n")
	}
	b.WriteString("\n</details>\n")
	return b.String(), nil
}

// writeRegressions lists the regressed units. Names are code spans and
// never a link's text: the link to each chart stands beside them.
func writeRegressions(b *strings.Builder, rep *gate.Report, in Input) {
	fails := rep.Failures()
	if len(fails) == 0 {
		return
	}
	fmt.Fprintf(b, "**Regressed (%d):**\n\n", len(fails))
	for i, c := range fails {
		p := c.PAdjusted
		if p == 0 {
			p = c.P
		}
		item := fmt.Sprintf("- %s of %s: %s (%s; base %s, head %s)", mdsafe.Code(shortName(c.Unit)), mdsafe.Code(shortName(c.Benchmark)),
			change(c.Delta), pValue(p), side(c.Base), side(c.Head))
		if in.SiteURL != "" {
			item += fmt.Sprintf(", [chart](%s)", mdsafe.URL(site.ChartURL(in.SiteURL, in.Runner, c.Benchmark, c.Unit)))
		}
		// The list is cut at half the comment, or a broken build that
		// regresses every unit makes a body GitHub refuses.
		if b.Len()+len(item) > maxList {
			fmt.Fprintf(b, "- … and %d more: see the gate's report below\n", len(fails)-i)
			break
		}
		b.WriteString(item + "\n")
	}
	b.WriteString("\n")
}

// maxName is the most bytes of a name the list shows. A longer name is
// cut and ends in "…". One name of 70000 bytes made a body of twice
// GitHub's limit. GitHub refuses such a body, so the verdict was not
// posted, and an earlier verdict's comment stayed as it was.
const maxName = 200

// shortName cuts s to maxName bytes on a character boundary.
func shortName(s string) string {
	if len(s) <= maxName {
		return s
	}
	n := maxName
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// runs returns the most base and head runs of any comparison.
func runs(rep *gate.Report) (base, head int) {
	for _, c := range rep.Comparisons {
		if c.Base != nil {
			base = max(base, c.Base.N)
		}
		if c.Head != nil {
			head = max(head, c.Head.N)
		}
	}
	return base, head
}

func pValue(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p)
}

func side(s *gate.Sample) string {
	if s == nil {
		return "no runs"
	}
	return fmt.Sprintf("%d runs", s.N)
}

func change(d float64) string {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return "change n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*d)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
