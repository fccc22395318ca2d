package compare

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/mdsafe/mdtest"
)

// hostileResult is a comparison in which every name a pull request can
// choose is name: scenario names, refs, the target's difference and the
// reasons and notes that quote them.
func hostileResult(name string) *Result {
	r := &Result{
		Base:  Side{Ref: "origin/" + name, Commit: "0123456789abcdef"},
		Head:  Side{Ref: name, Commit: "fedcba9876543210"},
		Notes: []string{"servegate differs: " + name},
	}
	r.Scenarios = []*ScenarioResult{
		{Key: Key{Pkg: name, Name: name}, Verdict: Verdict{State: Regression, Pairs: 3, Reason: "regression of " + name},
			TargetDiff: []string{"image: " + name + " (base: " + name + ")", "profile: " + name},
			BaseImage:  "base-" + name, HeadImage: "head-" + name},
		{Key: Key{Pkg: ".", Name: name + "2"}, NotJudged: "new in head: " + name},
	}
	return r
}

// TestHostileNamesMarkdown: names in gate.md make no link, image,
// mention, reference or HTML, and leave the document's shape as a benign
// name's.
func TestHostileNamesMarkdown(t *testing.T) {
	render := func(name string) string {
		var b strings.Builder
		require.NoError(t, hostileResult(name).WriteMarkdown(&b))
		return b.String()
	}
	want := render("chat-ok")
	require.Empty(t, mdtest.Findings(want))
	for _, name := range mdtest.HostileNames {
		got := render(name)
		require.Empty(t, mdtest.Findings(got), "name %q made active elements:\n%s", name, got)
		require.Equal(t, mdtest.ProseShape(want), mdtest.ProseShape(got), "name %q changed the shape:\n%s", name, got)
	}
}
