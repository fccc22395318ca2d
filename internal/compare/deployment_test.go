package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/mdsafe/mdtest"
	"github.com/servegate/servegate/internal/pipeline"
)

// TestTargetDifferenceAtTop: how head's deployment differs from base's
// opens both reports, flag by flag, scenarios with the same difference
// together; names and values a pull request controls stay inert text.
func TestTargetDifferenceAtTop(t *testing.T) {
	flag := pipeline.TargetChange{Key: "target.args", Flag: "--max-num-seqs", Base: "8", Head: "4"}
	hostile := pipeline.TargetChange{Key: "target.env.X`](https://evil.example) @team", Base: "<img src=x>", Head: "#12"}
	res := &Result{Scenarios: []*ScenarioResult{
		{Key: Key{Pkg: ".", Name: "chat"}, Verdict: Verdict{State: Regression, Pairs: 3}, TargetChanges: []pipeline.TargetChange{flag}, Mode: pipeline.PairAlternate},
		{Key: Key{Pkg: ".", Name: "rag"}, Verdict: Verdict{State: Pass, Pairs: 4}, TargetChanges: []pipeline.TargetChange{flag}, Mode: pipeline.PairAlternate},
		{Key: Key{Pkg: ".", Name: "odd"}, Verdict: Verdict{State: Pass, Pairs: 4}, TargetChanges: []pipeline.TargetChange{hostile}, Mode: pipeline.PairAlternate},
		{Key: Key{Pkg: ".", Name: "new"}, NotJudged: "new in head", TargetChanges: []pipeline.TargetChange{flag}},
	}}
	var md, text bytes.Buffer
	require.NoError(t, res.WriteMarkdown(&md))
	require.NoError(t, res.WriteText(&text))

	top, _, ok := strings.Cut(md.String(), "| scenario |")
	require.True(t, ok)
	assert.Contains(t, top, "base and head run in turn")
	assert.Contains(t, top, "The target differs between base and head:\n\n- `chat`, `rag`:\n  - `target.args`: head `--max-num-seqs 4` (base: `--max-num-seqs 8`)\n- `odd`:\n")
	assert.Empty(t, mdtest.Findings(md.String()), "no link, mention, reference or HTML:\n%s", md.String())
	assert.Contains(t, mdtest.CodeSpans(md.String()), hostile.Key)
	assert.Contains(t, mdtest.CodeSpans(md.String()), "<img src=x>")

	head, _, _ := strings.Cut(text.String(), "\n==")
	assert.Contains(t, head, "target differs in chat, rag:\n  target.args: --max-num-seqs 4 (base: --max-num-seqs 8)\n")
	assert.NotContains(t, head, "new", "a scenario not judged has no difference to show")
}

// TestNotResetNoted: a side whose server kept its prefix cache (a
// deployed server without the reset route) is noted once per scenario,
// however many pairs it ran.
func TestNotResetNoted(t *testing.T) {
	why := "the server has no POST /reset_prefix_cache (status 404); vLLM serves it with VLLM_SERVER_DEV_MODE=1"
	src := &fakeSource{check: checked("a", "b"), notReset: map[string]string{"1/a": why, "2/a": why, "3/a": why}}
	res := &Result{}
	require.NoError(t, compare(t.Context(), Config{}, src, fakeJudge{"a": {3, Pass}, "b": {3, Pass}}, res, t.TempDir(), &bytes.Buffer{}))
	assert.Equal(t, []string{"a: base's server was not emptied of cached prompts before its runs: " + why}, res.Notes)
}
