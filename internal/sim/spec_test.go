package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecDecoding runs requests with speculation and checks each step's
// tokens against the ground truth: a decoding step emits its accepted
// drafts and one more together, and /metrics keeps vLLM's counters.
func TestSpecDecoding(t *testing.T) {
	meanLen := map[float64]float64{}
	for _, prob := range []float64{0.3, 0.9} {
		p := testParams()
		p.SpecDraftTokens, p.SpecAcceptProb = 3, prob
		srv, url := start(t, Config{Params: &p})
		drafts, accepted, draftTok := 0, 0, 0
		perPos := make([]int, 3)
		for i := range 4 {
			id := fmt.Sprintf("spec-%v-%d", prob, i)
			r := post(context.Background(), url+"/v1/completions", completionBody("spec", 60, true), map[string]string{"X-Request-Id": id})
			require.NoError(t, r.err)
			tr, ok := srv.Truth(id)
			require.True(t, ok)
			require.Equal(t, 60, tr.OutputTokens)
			// Group the tokens by the step that produced them.
			var groups []int
			for k, ms := range tr.TokenMS {
				if k > 0 && ms == tr.TokenMS[k-1] {
					groups[len(groups)-1]++
					continue
				}
				groups = append(groups, 1)
			}
			assert.Equal(t, 1, groups[0], "the prefill step gives one token")
			left, next := 59, 0
			for _, g := range groups[1:] {
				k := min(3, left-1) // the draft shrinks near max_tokens
				if k == 0 {
					assert.Equal(t, 1, g, "a step without a draft gives one token")
					left--
					continue
				}
				require.Less(t, next, len(tr.SpecAccepted))
				a := tr.SpecAccepted[next]
				next++
				assert.Equal(t, a+1, g, "a verification gives its accepted drafts and one more")
				drafts++
				draftTok += k
				accepted += a
				for pos := range a {
					perPos[pos]++
				}
				left -= a + 1
			}
			assert.Equal(t, len(tr.SpecAccepted), next)
			assert.Zero(t, left)
		}
		m := scrape(t, srv)
		lbl := `{engine="0",model_name="sim-test"}`
		assert.Contains(t, m, fmt.Sprintf("vllm:spec_decode_num_drafts_total%s %d.0\n", lbl, drafts))
		assert.Contains(t, m, fmt.Sprintf("vllm:spec_decode_num_draft_tokens_total%s %d.0\n", lbl, draftTok))
		assert.Contains(t, m, fmt.Sprintf("vllm:spec_decode_num_accepted_tokens_total%s %d.0\n", lbl, accepted))
		for pos, n := range perPos {
			assert.Contains(t, m, fmt.Sprintf(`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="sim-test",position="%d"} %d.0`+"\n", pos, n))
		}
		meanLen[prob] = 1 + float64(accepted)/float64(drafts)
	}
	// vLLM's mean acceptance length follows the acceptance probability.
	assert.Greater(t, meanLen[0.9], meanLen[0.3]+1, "mean acceptance lengths %v", meanLen)
}

func TestSpecDecodingOffExportsNothing(t *testing.T) {
	p := testParams()
	srv, _ := start(t, Config{Params: &p})
	assert.NotContains(t, scrape(t, srv), "spec_decode")
	assert.NotContains(t, scrape(t, srv), "kv_offload_stored")
}
