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
		switch m.Value {
		case "higher":
			return 1
		case "lower":
			return -1
		}
		return 0
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

// directionWord names a direction for people.
func directionWord(better int) string {
	switch better {
	case 1:
		return "higher"
	case -1:
		return "lower"
	}
	return "unknown"
}
