package gate

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ServerUnitPrefix starts the benchfmt units of the server's own metrics
// (server-preemptions, server-kv-peak-ratio, ...). The default policy
// gates none of them; they explain a gated regression.
const ServerUnitPrefix = "server-"

// A ServerMove is a server metric whose change between base and head is
// significant, on a benchmark whose gate failed: the "why" next to the
// "what".
type ServerMove struct {
	// Benchmark is the regressed benchmark's full name.
	Benchmark string
	// Unit is the server unit, such as server-preemptions.
	Unit string
	// Base and Head are the centers of the two sides.
	Base, Head float64
}

// String writes the move as "server-preemptions 0 → 37".
func (m ServerMove) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	return fmt.Sprintf("%s %s → %s", m.Unit, f(m.Base), f(m.Head))
}

// ServerMoves returns, for every benchmark with a failed gated
// comparison, the server units of the same benchmark and configuration
// whose change is significant (benchstat's rule, p ≤ alpha), in report
// order.
func (r *Report) ServerMoves() []ServerMove {
	var out []ServerMove
	seen := map[string]bool{}
	for _, f := range r.Failures() {
		key := f.Benchmark + "\x00" + fmt.Sprint(f.Config)
		if seen[key] {
			continue
		}
		seen[key] = true
		for _, c := range r.Comparisons {
			if !strings.HasPrefix(c.Unit, ServerUnitPrefix) || c.Benchmark != f.Benchmark || !slices.Equal(c.Config, f.Config) {
				continue
			}
			if c.Base == nil || c.Head == nil || !c.Significant {
				continue
			}
			out = append(out, ServerMove{Benchmark: c.Benchmark, Unit: c.Unit, Base: c.Base.Center, Head: c.Head.Center})
		}
	}
	return out
}

// WriteServerMoves writes the server metrics that moved on each regressed
// benchmark, one line per benchmark ("Scenarios/scenario=x: server
// metrics moved: server-preemptions 0 → 37, ..."); nothing when none did.
func (r *Report) WriteServerMoves(w io.Writer) error {
	moves := r.ServerMoves()
	var b strings.Builder
	for i := 0; i < len(moves); {
		j := i
		var parts []string
		for ; j < len(moves) && moves[j].Benchmark == moves[i].Benchmark; j++ {
			parts = append(parts, moves[j].String())
		}
		fmt.Fprintf(&b, "%s: server metrics moved: %s\n", moves[i].Benchmark, strings.Join(parts, ", "))
		i = j
	}
	_, err := io.WriteString(w, b.String())
	return err
}
