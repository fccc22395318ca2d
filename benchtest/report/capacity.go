package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/servegate/servegate/benchtest/capacity"
)

// WriteCapacityTable writes a capacity search as an aligned text table,
// one line per step in the order run (rate, goodput, p99 TTFT, verdict,
// the bounds that failed), then the result line.
func WriteCapacityTable(w io.Writer, r *capacity.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "step\trate req/s\tgoodput req/s\tp99 ttft ms\tverdict\tfailed")
	for i, st := range r.Steps {
		v := fail
		if st.Pass {
			v = pass
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i+1, num(st.Rate), num(st.Goodput), num(st.P99TTFT), v, strings.Join(st.Failed, "; "))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write capacity table: %w", err)
	}
	_, err := fmt.Fprintln(w, CapacityLine(r))
	return err
}

// CapacityLine says what a search found in one line.
func CapacityLine(r *capacity.Result) string {
	s := fmt.Sprintf("max goodput rate: %s req/s", num(r.MaxRate))
	if !math.IsInf(r.MinFailRate, 1) {
		s += fmt.Sprintf(" (fails at %s)", num(r.MinFailRate))
	}
	s += fmt.Sprintf(", %d steps in %.1fs", len(r.Steps), r.Elapsed.Seconds())
	if r.Stopped != "" {
		s += "; stopped: " + r.Stopped
	}
	return s
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
