package dataset

import (
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/servegate/servegate/internal/tokenizer"
)

// The Hugging Face tokenizers library builds a whole Encoding for a text
// (tokens, offsets, masks, and per byte the alignments of its normalized
// string) before the binding keeps only the ids: about 115 bytes of C
// heap per byte of text (a 20 MB message peaked at 2.3 GB resident). So
// a text longer than PieceBytes is encoded in pieces of at most
// PieceBytes, and peak memory stays near 115 × PieceBytes whatever the
// text's length.
//
// A piece ends at a seam: before a space that follows a letter and comes
// before a letter ("abc| def"), where the pre-tokenizers of byte-level BPE
// (Llama-3, GPT-2), WordPiece (BERT) and Metaspace vocabularies all split.
// Each seam is checked with the tokenizer itself: the ids of SeamWindow
// bytes either side encoded together must be the ids of the two sides
// encoded apart, so a tokenizer that merges across the seam (or
// normalizes across it) is caught, and its text is cut elsewhere. A text
// that has no seam the tokenizer agrees with in a piece's last half is
// encoded whole from there, at the old cost.
const (
	// PieceBytes is the most bytes encoded at once when a text is cut.
	PieceBytes = 64 << 10
	// SeamWindow is the bytes either side of a seam encoded to check it.
	SeamWindow = 256
	// seamTries is the most seams checked for one piece before the rest
	// of the text is encoded whole.
	seamTries = 8
)

// pieceBytes is PieceBytes as the code reads it, so tests can lower it.
var pieceBytes = PieceBytes

// encodePieces is tok.Encode(text, false) in pieces of at most pieceBytes
// cut at seams the tokenizer agrees with: the same ids, bounded memory.
func encodePieces(tok *tokenizer.Tokenizer, text string) []int {
	if len(text) <= pieceBytes {
		return tok.Encode(text, false)
	}
	var ids []int
	eachPiece(tok, text, func(piece []int) { ids = append(ids, piece...) })
	return ids
}

// eachPiece calls f with the ids of each piece of text in turn.
func eachPiece(tok *tokenizer.Tokenizer, text string, f func([]int)) {
	for len(text) > pieceBytes {
		p := cutAt(tok, text)
		if p <= 0 {
			break
		}
		f(tok.Encode(text[:p], false))
		text = text[p:]
	}
	f(tok.Encode(text, false))
}

// cutAt returns where the first piece of text ends: a checked seam in
// text's first pieceBytes bytes but not its first half, or -1.
func cutAt(tok *tokenizer.Tokenizer, text string) int {
	tries := 0
	for p := pieceBytes; p > pieceBytes/2 && tries < seamTries; p-- {
		if !isSeam(text, p) {
			continue
		}
		tries++
		if seamHolds(tok, text, p) {
			return p
		}
	}
	return -1
}

// isSeam reports whether p is a letter, a space and a letter's place:
// text[p] is the space.
func isSeam(text string, p int) bool {
	if p <= 0 || p+1 >= len(text) || text[p] != ' ' {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(text[:p])
	after, _ := utf8.DecodeRuneInString(text[p+1:])
	return unicode.IsLetter(before) && unicode.IsLetter(after)
}

// seamHolds reports whether the tokenizer encodes the SeamWindow bytes
// either side of p together as it encodes them apart.
func seamHolds(tok *tokenizer.Tokenizer, text string, p int) bool {
	lo, hi := max(0, p-SeamWindow), min(len(text), p+SeamWindow)
	for lo > 0 && !utf8.RuneStart(text[lo]) {
		lo--
	}
	for hi < len(text) && !utf8.RuneStart(text[hi]) {
		hi++
	}
	left, right := tok.Encode(text[lo:p], false), tok.Encode(text[p:hi], false)
	return slices.Equal(tok.Encode(text[lo:hi], false), append(left, right...))
}
