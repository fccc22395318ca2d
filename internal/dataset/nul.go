package dataset

import (
	"strings"
	"sync"

	"github.com/servegate/servegate/internal/tokenizer"
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

// nulTokens tells which ids of a vocabulary have a text that is or holds
// NUL: those that decode to nothing alone and after a normal token. Each id
// is tested when a decode first needs it, not the whole vocabulary up
// front: a scan of Llama-3's 128,256 ids cost about 150 ms of CPU, an
// eighth of a 1,000-prompt bench start-up, for the two prompts in a
// thousand whose decode meets a NUL.
type nulTokens struct {
	tok *tokenizer.Tokenizer

	probeOnce sync.Once
	probe     []int // the ids of "a", the normal token tested before an id

	mu    sync.Mutex
	holds map[int]bool // ids tested so far

	idOnce sync.Once
	id     int // the lowest id that holds NUL (a lone NUL byte), or -1
}

var nulCache sync.Map // *tokenizer.Tokenizer -> *nulTokens

// nulsOf returns the NUL tokens of a tokenizer, one value per tokenizer.
func nulsOf(tok *tokenizer.Tokenizer) *nulTokens {
	if v, ok := nulCache.Load(tok); ok {
		return v.(*nulTokens)
	}
	v, _ := nulCache.LoadOrStore(tok, &nulTokens{tok: tok, holds: map[int]bool{}})
	return v.(*nulTokens)
}

// has reports whether id's text holds NUL; ids outside the vocabulary do not.
func (n *nulTokens) has(id int) bool {
	if id < 0 || id >= n.tok.VocabSize() {
		return false
	}
	n.mu.Lock()
	h, ok := n.holds[id]
	n.mu.Unlock()
	if ok {
		return h
	}
	n.probeOnce.Do(func() { n.probe = n.tok.Encode("a", false) })
	h = n.tok.Decode([]int{id}, false) == "" &&
		n.tok.Decode(append(append(make([]int, 0, len(n.probe)+1), n.probe...), id), false) == ""
	n.mu.Lock()
	n.holds[id] = h
	n.mu.Unlock()
	return h
}

// nulID returns the lowest id whose text holds NUL, or -1: the token a NUL
// byte encodes to. Byte-level vocabularies have it among the first few
// hundred ids (188 in Llama-3), so the scan stops early.
func (n *nulTokens) nulID() int {
	n.idOnce.Do(func() {
		n.id = -1
		for id := range n.tok.VocabSize() {
			if n.has(id) {
				n.id = id
				return
			}
		}
	})
	return n.id
}

// decodeText is tok.Decode(ids, false) that keeps NUL bytes.
func decodeText(tok *tokenizer.Tokenizer, ids []int) string {
	text := tok.Decode(ids, false)
	if text != "" || len(ids) == 0 {
		return text
	}
	nuls := nulsOf(tok)
	var b strings.Builder
	start := 0
	for i, id := range ids {
		if nuls.has(id) {
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
		return encodePieces(tok, text)
	}
	nul := nulsOf(tok).nulID()
	var ids []int
	for i, part := range strings.Split(text, "\x00") {
		if i > 0 && nul >= 0 {
			ids = append(ids, nul)
		}
		ids = append(ids, encodePieces(tok, part)...)
	}
	return ids
}

// countTokens is len(tok.Encode(text, addSpecial)) that does not stop at a
// NUL byte; it is how vLLM counts a prompt (tokenizer(text).input_ids).
func countTokens(tok *tokenizer.Tokenizer, text string, addSpecial bool) int {
	if !strings.Contains(text, "\x00") && len(text) <= pieceBytes {
		return len(tok.Encode(text, addSpecial))
	}
	n := len(encodeText(tok, text))
	if addSpecial {
		n += tok.NumSpecialTokensToAdd()
	}
	return n
}
