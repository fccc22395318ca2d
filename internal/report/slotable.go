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
	// void marks an SLO of an invalid run: measured, not judged.
	void = "VOID"
	// invalid marks a harness limit the run broke.
	invalid = "INVALID"
)

// harnessTag follows the metric of a harness limit in SLO tables.
const harnessTag = " (harness)"

// tableInvalid reports whether a table's harness rows make the run
// invalid.
func tableInvalid(vs []scenario.Verdict) bool {
	for _, v := range vs {
		if v.Harness && !v.Pass {
			return true
		}
	}
	return false
}

// verdictWord is a row's verdict; invalidRun says the harness made the
// run invalid, so that
// the SLO rows are not judged.
func verdictWord(v scenario.Verdict, invalidRun bool) string {
	switch {
	case v.Harness && !v.Pass:
		return invalid
	case v.Harness:
		return pass
	case invalidRun:
		return void
	case !v.Found:
		return missing
	case v.Pass:
		return pass
	}
	return fail
}

// rowMetric is the metric column of a row: harness limits are tagged.
func rowMetric(v scenario.Verdict) string {
	if v.Harness {
		return v.Bound.Metric + harnessTag
	}
	return v.Bound.Metric
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
// bound, measured, verdict. Harness limits (Verdict.Harness) are tagged
// "(harness)" and read INVALID when broken; then every SLO row reads VOID:
// the load generator fell behind, so the server was not judged.
func WriteSLOTable(w io.Writer, vs []scenario.Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tbound\tmeasured\tverdict")
	inv := tableInvalid(vs)
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rowMetric(v), bound(v.Bound), FormatMeasured(v), verdictWord(v, inv))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write slo table: %w", err)
	}
	return nil
}

// WriteSLOMarkdown writes the verdicts as a Markdown table, with the
// words of WriteSLOTable.
func WriteSLOMarkdown(w io.Writer, vs []scenario.Verdict) error {
	var b strings.Builder
	b.WriteString("| metric | bound | measured | verdict |\n| --- | --- | ---: | --- |\n")
	inv := tableInvalid(vs)
	for _, v := range vs {
		metric := "`" + v.Bound.Metric + "`"
		if v.Harness {
			metric += harnessTag
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", metric, bound(v.Bound), FormatMeasured(v), verdictWord(v, inv))
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
