package conversation

import (
	"strconv"
	"strings"
	"sync"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

// minWords is the fewest stable word tokens a blockVocab needs before it
// falls back to the whole vocabulary.
const minWords = 1000

// selfTestTokens is the length of the sequence a blockVocab encodes once
// to check that its words tokenize back to themselves in a sequence.
const selfTestTokens = 4096

// A blockVocab is what trace blocks are drawn from.
type blockVocab struct {
	// ids are the token ids blocks are drawn from.
	ids []int
	// text[i] is ids[i]'s text as a message carries it, when stable.
	text []string
	// stable is true when a message made of text[i] encodes back to its
	// ids exactly (checked once on a long random sequence), so a line's
	// text is built without the tokenizer.
	stable bool
}

var vocabCache sync.Map // *tokenizer.Tokenizer -> *blockVocab

// blockVocabOf returns tok's block vocabulary: words that tokenize back to
// themselves in any sequence of them, tokens that decode to a space and two
// or more lowercase ASCII letters and encode back to themselves alone
// (" the" for Llama-3), or, for a tokenizer whose decoding puts the spaces
// between words, such words without the space ("the" for BERT, sent as
// " the"). A message of such words encodes to its ids, so block k of a line
// is exactly its tokens [k*block, (k+1)*block) and lines that share hash
// ids share exactly those tokens. With fewer than minWords such tokens, or
// when the self-test fails, it falls back to the base vocabulary without
// special tokens, whose decoded text re-encodes to other counts (the
// fix-up then makes each line's total exact, not its blocks).
func blockVocabOf(tok *tokenizer.Tokenizer) *blockVocab {
	if v, ok := vocabCache.Load(tok); ok {
		return v.(*blockVocab)
	}
	special := map[int]bool{}
	for _, id := range tok.SpecialIDs() {
		special[id] = true
	}
	var spaced, bare, all []int
	var spacedText, bareText []string
	for id := range tok.BaseVocabSize() {
		if special[id] {
			continue
		}
		all = append(all, id)
		s := tok.Decode([]int{id}, false)
		if !isWord(strings.TrimPrefix(s, " ")) {
			continue
		}
		if enc := tok.Encode(s, false); len(enc) == 1 && enc[0] == id {
			if s[0] == ' ' {
				spaced, spacedText = append(spaced, id), append(spacedText, s)
			} else {
				bare, bareText = append(bare, id), append(bareText, " "+s)
			}
		}
	}
	v := &blockVocab{ids: all}
	switch {
	case len(spaced) >= minWords:
		v = &blockVocab{ids: spaced, text: spacedText, stable: true}
	case len(bare) >= minWords:
		v = &blockVocab{ids: bare, text: bareText, stable: true}
	}
	if v.stable && !v.selfTest(tok) {
		v = &blockVocab{ids: all}
	}
	vocabCache.Store(tok, v)
	return v
}

// selfTest encodes a long random message of v's words and reports whether
// it gives back their ids.
func (v *blockVocab) selfTest(tok *tokenizer.Tokenizer) bool {
	r := NewRand(0x73656c66)
	want := make([]int, selfTestTokens)
	var b strings.Builder
	for i := range want {
		k := r.IntN(len(v.ids))
		want[i] = v.ids[k]
		b.WriteString(v.text[k])
	}
	got := tok.Encode(b.String(), false)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// isWord reports whether s is two or more lowercase ASCII letters.
func isWord(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// traceConversation builds one trace line's conversation: its blocks'
// words, block h drawn by a generator seeded with the seed and h.
func traceConversation(l traceLine, block int, tok *tokenizer.Tokenizer, v *blockVocab, seed int64) Conversation {
	c := Conversation{ID: "line-" + strconv.Itoa(l.line), At: l.at, HasAt: true}
	turn := Turn{MaxTokens: l.output}
	if v.stable {
		var b strings.Builder
		n := 0
		for _, h := range l.hashes {
			r := NewRand(uint64(seed), 1, uint64(h))
			for range min(block, l.input-n) {
				b.WriteString(v.text[r.IntN(len(v.ids))])
				n++
			}
		}
		// The builder's doubling leaves up to half its room unused, held
		// for the whole run: a copy of the exact size holds the text alone.
		turn.User, turn.UserTokens = b.String(), n
		if b.Cap() > len(turn.User)+len(turn.User)/16 {
			turn.User = strings.Clone(turn.User)
		}
		c.Turns = []Turn{turn}
		return c
	}
	ids := make([]int, 0, l.input)
	for _, h := range l.hashes {
		r := NewRand(uint64(seed), 1, uint64(h))
		for range min(block, l.input-len(ids)) {
			ids = append(ids, v.ids[r.IntN(len(v.ids))])
		}
	}
	fix := NewRand(uint64(seed), 2, uint64(l.line))
	more := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = v.ids[fix.IntN(len(v.ids))]
		}
		return out
	}
	var final []int
	turn.User, final = dataset.DecodeToLength(tok, ids, l.input, more)
	turn.UserTokens = len(final)
	c.Turns = []Turn{turn}
	return c
}
