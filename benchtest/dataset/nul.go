package dataset

import (
	"strings"
	"sync"

	"github.com/servegate/servegate/tokenizer"
)

// The tokenizer binding (daulet/tokenizers) passes text through C strings:
// Decode returns "" when the text holds a NUL byte, and Encode stops at the
// first NUL. Byte-level vocabularies have a token for the NUL byte (id 188
// in Llama-3), and random prompts walk over it (about one prompt in 125 of
// 1,024 tokens on Llama-3), so the dataset works around both here:
// decoding splits the ids at NUL tokens, which is exact for byte-level
// decoders since NUL is a whole UTF-8 character; encoding splits the text at
// NUL bytes and puts the NUL token between the parts, which matches the
// real tokenization unless the vocabulary has a merge spanning a NUL byte.
// The proper fix belongs in the tokenizer package.

// nulTokens are the ids of a vocabulary whose text is or holds NUL.
type nulTokens struct {
	once sync.Once
	ids  map[int]bool
	id   int // the token of a lone NUL byte, or -1
}

var nulCache sync.Map // *tokenizer.Tokenizer -> *nulTokens

// nulsOf scans a tokenizer's vocabulary once for tokens that decode to
// nothing alone and after a normal token: their text holds a NUL.
func nulsOf(tok *tokenizer.Tokenizer) *nulTokens {
	v, _ := nulCache.LoadOrStore(tok, &nulTokens{})
	n := v.(*nulTokens)
	n.once.Do(func() {
		n.ids, n.id = map[int]bool{}, -1
		probe := tok.Encode("a", false)
		for id := range tok.VocabSize() {
			if tok.Decode([]int{id}, false) == "" && tok.Decode(append(append([]int(nil), probe...), id), false) == "" {
				n.ids[id] = true
				if n.id < 0 {
					n.id = id
				}
			}
		}
	})
	return n
}

// decodeText is tok.Decode(ids, false) that keeps NUL bytes.
func decodeText(tok *tokenizer.Tokenizer, ids []int) string {
	text := tok.Decode(ids, false)
	if text != "" || len(ids) == 0 {
		return text
	}
	nuls := nulsOf(tok)
	if len(nuls.ids) == 0 {
		return text
	}
	var b strings.Builder
	start := 0
	for i, id := range ids {
		if nuls.ids[id] {
			b.WriteString(tok.Decode(ids[start:i], false))
			b.WriteByte(0)
			start = i + 1
		}
	}
	b.WriteString(tok.Decode(ids[start:], false))
	return b.String()
}

// encodeText is tok.Encode(text, false) that does not stop at a NUL byte.
func encodeText(tok *tokenizer.Tokenizer, text string) []int {
	if !strings.Contains(text, "\x00") {
		return tok.Encode(text, false)
	}
	nul := nulsOf(tok).id
	var ids []int
	for i, part := range strings.Split(text, "\x00") {
		if i > 0 && nul >= 0 {
			ids = append(ids, nul)
		}
		ids = append(ids, tok.Encode(part, false)...)
	}
	return ids
}

// countTokens is len(tok.Encode(text, addSpecial)) that does not stop at a
// NUL byte; it is how vLLM counts a prompt (tokenizer(text).input_ids).
func countTokens(tok *tokenizer.Tokenizer, text string, addSpecial bool) int {
	if !strings.Contains(text, "\x00") {
		return len(tok.Encode(text, addSpecial))
	}
	n := len(encodeText(tok, text))
	if addSpecial {
		n += tok.NumSpecialTokensToAdd()
	}
	return n
}
