package store

import "golang.org/x/perf/benchfmt"

// The keys that mark a run whose numbers cannot speak for the server.
// A run's result JSON and each of its benchfmt lines carry the same keys.
// internal/metrics and internal/report write them. Every reader checks a
// run with Refusal or LineRefusal.
const (
	// InterruptedKey marks a run cut short by a signal or a deadline.
	// Its samples cover part of the load only. In the result JSON its
	// value is true. On a benchfmt line any value but "false" counts.
	InterruptedKey = "interrupted"
	// InvalidKey holds why a run is invalid. The reason names the
	// harness limits the load generator broke, so the run's numbers say
	// nothing about the server.
	InvalidKey = "invalid"
)

// Refusal says why a run's numbers cannot be used, or returns "" when
// they can. Its message is "invalid run: load generator fell behind:
// <reason>" or "interrupted run: ...", the same wherever a run is
// refused.
func Refusal(interrupted bool, invalid string) string {
	switch {
	case invalid != "":
		return "invalid run: load generator fell behind: " + invalid
	case interrupted:
		return "interrupted run: cut short before it sent its whole load"
	}
	return ""
}

// LineRefusal is Refusal of the run a benchfmt result line comes from,
// read from the line's configuration.
func LineRefusal(rec *benchfmt.Result) string {
	v := string(rec.GetConfig(InterruptedKey))
	return Refusal(v != "" && v != "false", string(rec.GetConfig(InvalidKey)))
}
