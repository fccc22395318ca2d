package dataset

import (
	"math"
	"strings"

	"github.com/servegate/servegate/internal/tokenizer"
)

// This file exports the few dataset helpers that internal/conversation
// builds its conversations with, so that the two packages make prompts of
// exact token length and reproduce Python's random module the same way.

// DecodeToLength decodes ids to text and re-encodes it (without special
// tokens); while the count misses target it truncates the ids to target or
// appends more(target - count) ids and tries again, at most ten rounds, as
// vLLM's random dataset fixes its prompts up. It returns the text and its
// token ids as the tokenizer counts them, which may miss target after the
// last round; callers report len(ids), never target.
func DecodeToLength(tok *tokenizer.Tokenizer, ids []int, target int, more func(n int) []int) (string, []int) {
	g := &randomGen{tok: tok}
	return g.decodeToTarget(ids, target, more)
}

// A PyRandom is Python's random.Random after random.seed(seed): the same
// Mersenne Twister and the same integer draws, so that a port of a vLLM
// script shuffles and samples as the script does for the same seed.
type PyRandom struct{ r *pyRandom }

// NewPyRandom returns the generator in the state random.seed(seed) leaves.
func NewPyRandom(seed int64) *PyRandom { return &PyRandom{r: newPyRandom(seed)} }

// Shuffle is random.shuffle on a list of n items: swap exchanges items i
// and j.
func (p *PyRandom) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, p.r.below(i+1))
	}
}

// Sample returns the indexes random.sample(range(n), k) picks, in order:
// CPython's pool method for small populations and its set method for large
// ones. k must be in [0, n].
func (p *PyRandom) Sample(n, k int) []int {
	out := make([]int, k)
	setsize := 21
	if k > 5 {
		setsize += int(math.Pow(4, math.Ceil(math.Log(float64(k*3))/math.Log(4))))
	}
	if n <= setsize {
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := range k {
			j := p.r.below(n - i)
			out[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return out
	}
	selected := make(map[int]bool, k)
	for i := range k {
		j := p.r.below(n)
		for selected[j] {
			j = p.r.below(n)
		}
		selected[j] = true
		out[i] = j
	}
	return out
}

// EncodeText returns text's token ids without special tokens, NUL bytes
// included (the tokenizer binding stops at the first NUL; see nul.go).
func EncodeText(tok *tokenizer.Tokenizer, text string) []int { return encodeText(tok, text) }

// CountText returns len(EncodeText(tok, text)) without holding the ids
// of a long text.
func CountText(tok *tokenizer.Tokenizer, text string) int {
	if strings.Contains(text, "\x00") {
		return len(encodeText(tok, text))
	}
	n := 0
	eachPiece(tok, text, func(ids []int) { n += len(ids) })
	return n
}

// DecodeText decodes ids to text, special tokens kept, NUL bytes included
// (the tokenizer binding returns "" for a text that holds NUL).
func DecodeText(tok *tokenizer.Tokenizer, ids []int) string { return decodeText(tok, ids) }
