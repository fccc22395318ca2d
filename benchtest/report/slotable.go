package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/servegate/servegate/benchtest/scenario"
)

// Verdict words in SLO tables.
const (
	pass    = "PASS"
	fail    = "FAIL"
	missing = "MISSING"
)

func verdictWord(v scenario.Verdict) string {
	switch {
	case !v.Found:
		return missing
	case v.Pass:
		return pass
	}
	return fail
}

// FormatMeasured writes a measured value with enough digits to compare it
// with a bound (six significant digits).
func FormatMeasured(v scenario.Verdict) string {
	if !v.Found {
		return "-"
	}
	return strconv.FormatFloat(v.Measured, 'g', 6, 64)
}

func bound(b scenario.Bound) string {
	return b.Op + " " + strconv.FormatFloat(b.Value, 'g', -1, 64)
}

// WriteSLOTable writes the verdicts as an aligned text table: metric,
// bound, measured, verdict.
func WriteSLOTable(w io.Writer, vs []scenario.Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tbound\tmeasured\tverdict")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Bound.Metric, bound(v.Bound), FormatMeasured(v), verdictWord(v))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write slo table: %w", err)
	}
	return nil
}

// WriteSLOMarkdown writes the verdicts as a Markdown table.
func WriteSLOMarkdown(w io.Writer, vs []scenario.Verdict) error {
	var b strings.Builder
	b.WriteString("| metric | bound | measured | verdict |\n| --- | --- | ---: | --- |\n")
	for _, v := range vs {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Bound.Metric, bound(v.Bound), FormatMeasured(v), verdictWord(v))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write slo markdown: %w", err)
	}
	return nil
}

// SLOFailure says in one line what broke, such as
// "p99_ttft_ms = 912.3, want <= 800"; "" when every verdict passed.
func SLOFailure(vs []scenario.Verdict) string {
	var parts []string
	for _, v := range vs {
		switch {
		case !v.Found:
			parts = append(parts, fmt.Sprintf("%s was not measured, want %s", v.Bound.Metric, bound(v.Bound)))
		case !v.Pass:
			parts = append(parts, fmt.Sprintf("%s = %s, want %s", v.Bound.Metric, FormatMeasured(v), bound(v.Bound)))
		}
	}
	return strings.Join(parts, "; ")
}
