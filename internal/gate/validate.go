package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/servegate/servegate/internal/store"
)

// The gate refuses every result line that store.LineRefusal refuses: a
// line marked store.InterruptedKey or store.InvalidKey.
const (
	// pairKey labels the two runs of one pair in paired mode
	// (servegate compare writes "pair: N" on the base and the head
	// run it drove at the same time). It never splits the grouping; gate
	// -paired matches base and head values by it.
	pairKey = "pair"
)

// markerKeys returns the run marker keys and the pair key that ignore (a
// benchstat -ignore list) does not already name, comma-separated.
func markerKeys(ignore string) string {
	var keys []string
	for _, k := range []string{store.InterruptedKey, store.InvalidKey, pairKey} {
		if !slices.Contains(strings.Split(ignore, ","), k) {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, ",")
}

// maxRejectsShown bounds how many rejected result lines an error names;
// the rest are counted.
const maxRejectsShown = 10

// badValue says why a result line holds a number the gate must not
// compare, or returns "". NaN and ±Inf have no order (go-moremath's
// Mann-Whitney U test never returns on a NaN), and a negative duration
// is not a measurement.
func badValue(rec *benchfmt.Result) string {
	for _, v := range rec.Values {
		unit := v.Unit
		if v.OrigUnit != "" {
			unit = v.OrigUnit
		}
		switch {
		case math.IsNaN(v.Value) || math.IsInf(v.Value, 0):
			return fmt.Sprintf("%s is %v: not a finite number", unit, v.Value)
		case v.Value < 0 && isDuration(v.Unit):
			return fmt.Sprintf("%s is %v: a negative duration", unit, v.Value)
		}
	}
	return ""
}

// isDuration reports whether a (tidied) unit is a duration: servegate's
// *-sec latencies or benchfmt's sec/op (from ns/op).
func isDuration(unit string) bool {
	return strings.HasSuffix(unit, "-sec") || strings.HasSuffix(unit, "sec/op")
}

// unusable says why a result line comes from a run that cannot speak for
// the server, or returns "".
func unusable(rec *benchfmt.Result) string {
	return store.LineRefusal(rec)
}

// rejects collects rejected result lines, keeping the first few.
type rejects struct {
	// why heads the error; %d is the number of lines.
	why   string
	n     int
	shown []string
}

// Headings of the rejects errors.
const (
	badValues   = "bad value: %d result line(s) hold a NaN, an infinity or a negative duration, which no comparison can use; fix or remove them:"
	refusedRuns = "refused: %d result line(s) come from runs that cannot speak for the server (" +
		store.InterruptedKey + " or " + store.InvalidKey + " in their configuration); rerun them:"
	unpairedRuns = "unpaired: %d result line(s) carry no " + pairKey + ": key, which -paired matches base and head runs by; " +
		"servegate compare writes them; or gate without -paired:"
)

func (r *rejects) add(rec *benchfmt.Result, msg string) {
	r.n++
	if len(r.shown) < maxRejectsShown {
		file, line := rec.Pos()
		r.shown = append(r.shown, fmt.Sprintf("%s:%d: Benchmark%s: %s", file, line, rec.Name, msg))
	}
}

// err returns nil or one error naming the rejected lines, one a line.
func (r *rejects) err() error {
	if r.n == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, r.why, r.n)
	for _, s := range r.shown {
		b.WriteString("\n" + s)
	}
	if more := r.n - len(r.shown); more > 0 {
		fmt.Fprintf(&b, "\n... and %d more", more)
	}
	return fmt.Errorf("%s", b.String())
}

// finite reports whether every value is a finite number: the last guard
// before the statistics, should a non-finite value get past read.
func finite(values []float64) bool {
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
