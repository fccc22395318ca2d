package scenario

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/sim"
)

// TestSimKnobRanges: a simulator knob out of its range in target.args is
// one error naming file, line and field when the file is loaded.
func TestSimKnobRanges(t *testing.T) {
	cases := []struct{ src, want string }{
		{"target:\n  kind: sim\n  args: [\"--tool_call_rate=1.5\"]\n", "bad.yaml:4: target.args[0]: tool_call_rate: 1.5 is over the maximum 1"},
		{"target:\n  kind: inproc\n  args:\n    - --max_num_seqs=4\n    - --spec-draft-tokens=65\n", "bad.yaml:6: target.args[1]: spec_draft_tokens: 65 is over the maximum 64"},
		{"target:\n  kind: sim\n  args: [\"--kv_offload_blocks=many\"]\n", `bad.yaml:4: target.args[0]: kv_offload_blocks: want an integer, got "many"`},
		{"target:\n  kind: sim\n  args: [\"--reasoning_share=NaN\"]\n", "bad.yaml:4: target.args[0]: reasoning_share: NaN is over the maximum 1"},
		{"target:\n  kind: sim\n  args: [\"--spec_accept_prob\"]\n", `bad.yaml:4: target.args[0]: simulator arg "--spec_accept_prob": want --knob=value`},
		{"target:\n  kind: container\n  image: x\n  backends:\n    - args: [\"--kv_offload_load_us=-1\"]\n", "bad.yaml:6: target.backends[0].args[0]: kv_offload_load_us: must be at least 0, got -1"},
	}
	for _, c := range cases {
		_, err := Parse("bad.yaml", []byte("name: a\n"+c.src))
		if assert.Error(t, err, c.src) {
			assert.Equal(t, c.want, err.Error())
		}
	}
	_, err := Parse("ok.yaml", []byte("name: a\ntarget:\n  kind: sim\n  args: [--tool_call_rate=1, --tool_call_arg_tokens=65536, --spec_draft_tokens=64, --spec_accept_prob=0, --kv_offload_blocks=16777216, --kv_offload_load_us=1e6, --reasoning_share=0.3]\n"))
	assert.NoError(t, err, "values at the limits are accepted")
}

// TestSimKnobRangesMatchSimulator holds SimKnobRanges to the simulator's
// own knobs: each exists, with the same maximum, and the simulator accepts
// the range's ends and refuses past them.
func TestSimKnobRangesMatchSimulator(t *testing.T) {
	for _, r := range SimKnobRanges {
		p := sim.DefaultParams()
		_, ok := p.Get(r.Key)
		require.True(t, ok, "the simulator has no knob %s", r.Key)
		if m, ok := sim.MaxOf(r.Key); ok {
			assert.Equal(t, m, fmtNum(r.Max), "maximum of %s", r.Key)
		}
		for v, valid := range map[float64]bool{r.Min: true, r.Max: true, r.Min - 1: false, r.Max + 1: false} {
			p := sim.DefaultParams()
			require.NoError(t, p.Set(r.Key, strconv.FormatFloat(v, 'f', -1, 64)))
			if valid {
				assert.NoError(t, p.Validate(), "%s=%v", r.Key, v)
			} else {
				assert.Error(t, p.Validate(), "%s=%v", r.Key, v)
			}
		}
	}
}

// TestDocsListSimKnobRanges keeps docs/scenarios.md's simulator section
// true: every checked knob is named there.
func TestDocsListSimKnobRanges(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	require.NoError(t, err)
	for _, r := range SimKnobRanges {
		assert.Contains(t, string(doc), "`"+r.Key+"`", "docs/scenarios.md does not name the simulator knob %s", r.Key)
	}
}
