package dataset

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/servegate/servegate/fixtures"
)

// The expected values are Python tokenizers 0.20.3's on the same file:
// decode([370, 188, 370]) == "ab\x00ab", encode("ab\x00ab") == [370, 188,
// 370], encode("ab!\x00ab") == [370, 0, 188, 370].
func TestNULWorkaround(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	assert.Equal(t, "", tok.Decode([]int{370, 188, 370}, false), "the binding still drops text with NUL; remove the workaround once fixed")
	assert.Equal(t, "ab\x00ab", decodeText(tok, []int{370, 188, 370}))
	assert.Equal(t, "ab", decodeText(tok, []int{370}))
	assert.Equal(t, []int{370, 188, 370}, encodeText(tok, "ab\x00ab"))
	assert.Equal(t, 4, countTokens(tok, "ab\x00ab", true), "BOS + 3")
	assert.Equal(t, []int{370, 0, 188, 370}, encodeText(tok, "ab!\x00ab"))
	assert.Equal(t, 188, nulsOf(tok).nulID())
	assert.Equal(t, -1, nulsOf(loadTokenizer(t, fixtures.BERT)).nulID())
}

// TestNULTokensMatchFullScan tests each id of the shipped vocabularies the
// way the workaround once did up front, and checks that the ids tested on
// demand agree: the decoded and encoded text is then the same as before.
func TestNULTokensMatchFullScan(t *testing.T) {
	for _, name := range []string{fixtures.Llama3, fixtures.BERT} {
		t.Run(name, func(t *testing.T) {
			tok := loadTokenizer(t, name)
			nulCache.Delete(tok)
			probe := tok.Encode("a", false)
			want, wantID := map[int]bool{}, -1
			for id := range tok.VocabSize() {
				if tok.Decode([]int{id}, false) == "" && tok.Decode(append(append([]int(nil), probe...), id), false) == "" {
					want[id] = true
					if wantID < 0 {
						wantID = id
					}
				}
			}
			nuls := nulsOf(tok)
			got := map[int]bool{}
			for id := -1; id <= tok.VocabSize(); id++ {
				if nuls.has(id) {
					got[id] = true
				}
			}
			assert.Equal(t, want, got)
			assert.Equal(t, wantID, nuls.nulID())
		})
	}
}
