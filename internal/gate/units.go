package gate

import (
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Direction reports whether higher (+1) or lower (-1) values of unit
// are better, or 0 when unknown.
//
// "Unit X better=lower|higher" metadata in the inputs wins. Without it,
// servegate's conventions decide: latencies in seconds ("ttft-p99-sec",
// "itl-p50-sec", "sec/op") and ratios of failures ("fail-ratio") are
// better lower; rates ("tok/s", "req/s", "goodput-req/s", "B/s") are
// better higher; then benchfmt's own defaults (B/op, allocs/op lower).
func Direction(units benchfmt.UnitMetadataMap, unit string) int {
	if m := units.Get(unit, "better"); m != nil {
		d, _ := parseDirection(m.Value)
		return d
	}
	switch {
	case strings.HasSuffix(unit, "-sec"), strings.HasSuffix(unit, "sec/op"):
		return -1
	case unit == "fail-ratio", strings.HasSuffix(unit, "-fail-ratio"):
		return -1
	case strings.HasSuffix(unit, "/s"):
		return 1
	}
	return units.GetBetter(unit)
}

// parseDirection reads a direction word, in metadata, a policy or the
// JSON report: +1 for "higher", -1 for "lower", else 0 and false.
func parseDirection(word string) (int, bool) {
	switch word {
	case "higher":
		return 1, true
	case "lower":
		return -1, true
	}
	return 0, false
}

// directionWord names a direction for people; parseDirection reads it.
func directionWord(better int) string {
	switch better {
	case 1:
		return "higher"
	case -1:
		return "lower"
	}
	return "unknown"
}
