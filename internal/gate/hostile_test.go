package gate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/mdsafe/mdtest"
)

// hostileNames are mdtest's names, each bare and as the full benchmark
// name a scenario of that name gets.
var hostileNames = func() []string {
	var names []string
	for _, n := range mdtest.HostileNames {
		names = append(names, n, "Scenarios/scenario="+n)
	}
	return names
}()

// hostileReport is a report in which every name is name: its benchmarks,
// units and config values, and the errors and warnings that quote them.
func hostileReport(name string) *Report {
	r := &Report{Verdict: Fail, Alpha: 0.05}
	for i, gated := range []bool{true, false} {
		r.Comparisons = append(r.Comparisons, &Comparison{
			Benchmark: name, Unit: name, Config: []KeyValue{{Key: "target", Value: name}},
			Base: &Sample{N: 5}, Head: &Sample{N: 5}, Delta: 0.2 * float64(i+1), P: 0.01,
			Gated: gated, Verdict: Fail, Reason: "regression",
		})
	}
	r.Errors = []string{"mismatched inputs: gated benchmarks in base but not in head: " + name}
	r.Warnings = []string{"benchmark " + name + " has one run"}
	return r
}

// TestHostileNamesMarkdown: names in the gate's Markdown make no link,
// image, mention, reference or HTML, and leave the document's shape as
// a benign name's.
func TestHostileNamesMarkdown(t *testing.T) {
	render := func(name string) string {
		var b strings.Builder
		require.NoError(t, hostileReport(name).WriteMarkdown(&b))
		return b.String()
	}
	want := render("Scenarios/scenario=ok")
	for _, name := range hostileNames {
		got := render(name)
		require.Equal(t, mdtest.Findings(want), mdtest.Findings(got), "name %q made active elements:\n%s", name, got)
		require.Equal(t, mdtest.ProseShape(want), mdtest.ProseShape(got), "name %q changed the shape:\n%s", name, got)
	}
}
