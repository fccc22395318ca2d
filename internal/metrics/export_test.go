package metrics

import "testing"

// Test hooks for the external golden merge test (golden_merge_test.go),
// which imports internal/shard, a package that imports this one.

// GoldenRecords returns numpy's golden records and their duration.
var GoldenRecords = loadGoldenRecords

// A GoldenSet is one option set of expected.json and numpy's values.
type GoldenSet struct {
	Options Options
	Values  map[string]float64
}

// GoldenExpected returns expected.json's option sets by name.
func GoldenExpected(tb testing.TB) map[string]GoldenSet {
	out := map[string]GoldenSet{}
	for name, set := range loadExpected(tb) {
		out[name] = GoldenSet{Options: set.Options.options(), Values: set.Values}
	}
	return out
}

// Close reports whether a and b agree to rel, relatively.
var Close = close
