package dataset

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/servegate/servegate/internal/tokenizer"
)

// maxFixupRounds is the number of decode/re-encode rounds vLLM allows before
// it accepts a prompt whose length misses the target.
const maxFixupRounds = 10

// randomGen holds what every random prompt is built from.
type randomGen struct {
	tok     *tokenizer.Tokenizer
	allowed []int // token ids prompts walk over: the base vocabulary without special ids, ascending
	cleanup bool  // apply transformers' clean_up_tokenization after decoding
}

// A drawFunc returns n token ids drawn uniformly from [0, BaseVocabSize).
type drawFunc func(n int) []int

func newRandomGen(s Spec, tok *tokenizer.Tokenizer) *randomGen {
	special := map[int]bool{}
	for _, id := range tok.SpecialIDs() {
		special[id] = true
	}
	allowed := make([]int, 0, tok.BaseVocabSize())
	for id := 0; id < tok.BaseVocabSize(); id++ {
		if !special[id] {
			allowed = append(allowed, id)
		}
	}
	cfg := s.TokenizerConfig
	return &randomGen{tok: tok, allowed: allowed, cleanup: cfg != nil && cfg.CleanUpTokenizationSpaces}
}

// lengthBounds returns the inclusive ranges input and output lengths are
// drawn from, or vLLM's validation error. The input length excludes the
// special tokens the tokenizer adds.
func lengthBounds(tok *tokenizer.Tokenizer, rangeRatio float64, inputLen, outputLen int) (inLo, inHi, outLo, outHi int, err error) {
	if !(rangeRatio >= 0 && rangeRatio < 1) {
		return 0, 0, 0, 0, fmt.Errorf("range ratio %v must be in [0, 1)", rangeRatio)
	}
	real := max(0, inputLen-tok.NumSpecialTokensToAdd())
	inLo = int(math.Floor(float64(real) * (1 - rangeRatio)))
	inHi = int(math.Ceil(float64(real) * (1 + rangeRatio)))
	outLo = max(int(math.Floor(float64(outputLen)*(1-rangeRatio))), 1)
	outHi = max(int(math.Ceil(float64(outputLen)*(1+rangeRatio))), 1)
	if inLo > inHi {
		return 0, 0, 0, 0, fmt.Errorf("invalid input sampling interval: low=%d > high=%d", inLo, inHi)
	}
	if outLo > outHi {
		return 0, 0, 0, 0, fmt.Errorf("invalid output sampling interval: low=%d > high=%d", outLo, outHi)
	}
	return inLo, inHi, outLo, outHi, nil
}

// samplingParams draws n input lengths, output lengths and vocabulary
// offsets, in vLLM's order.
func (g *randomGen) samplingParams(r *npGenerator, n int, rangeRatio float64, inputLen, outputLen int) (in, out, offsets []int, err error) {
	inLo, inHi, outLo, outHi, err := lengthBounds(g.tok, rangeRatio, inputLen, outputLen)
	if err != nil {
		return nil, nil, nil, err
	}
	in = r.integers(inLo, inHi+1, n)
	out = r.integers(outLo, outHi+1, n)
	offsets = r.integers(0, g.tok.BaseVocabSize(), n)
	return in, out, offsets, nil
}

// sequence builds request index's prompt: the shared prefix, then inputLen
// ids walked over the allowed vocabulary from offset+index, decoded and fixed
// up to the target length. It returns the prompt and its length in tokens as
// re-encoded after the fix-up.
func (g *randomGen) sequence(prefix []int, inputLen, offset, index int, draw drawFunc) (string, int) {
	ids := make([]int, 0, len(prefix)+inputLen)
	ids = append(ids, prefix...)
	n := len(g.allowed)
	for j := range inputLen {
		ids = append(ids, g.allowed[(offset+index+j)%n])
	}
	prompt, final := g.decodeToTarget(ids, len(prefix)+inputLen, draw)
	return prompt, len(final)
}

// decodeToTarget decodes ids and re-encodes the text; while the count misses
// target it truncates or appends random ids from [0, BaseVocabSize) and
// tries again, at most maxFixupRounds times. It returns the final text and
// its ids, which may miss target after the last round.
func (g *randomGen) decodeToTarget(ids []int, target int, draw drawFunc) (string, []int) {
	for round := 0; ; round++ {
		prompt := g.decode(ids)
		ids = encodeText(g.tok, prompt)
		if round == maxFixupRounds || len(ids) == target {
			return prompt, ids
		}
		if len(ids) < target {
			ids = append(ids, draw(target-len(ids))...)
		} else {
			ids = ids[:target]
		}
	}
}

// decode is transformers' tokenizer.decode(ids): special tokens kept, and
// clean_up_tokenization applied when the tokenizer config asks for it.
func (g *randomGen) decode(ids []int) string {
	text := decodeText(g.tok, ids)
	if g.cleanup {
		text = cleanUpTokenization(text)
	}
	return text
}

// loadRandom builds the random dataset (vLLM's RandomDataset).
func loadRandom(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	p := s.Random
	minTotal := p.PrefixLen + int(math.Floor(float64(max(0, p.InputLen-tok.NumSpecialTokensToAdd()))*(1-p.RangeRatio)))
	if minTotal < 1 {
		return nil, fmt.Errorf("input length %d is too small: with %d special tokens and range ratio %v the shortest prompt (prefix + sampled) has %d tokens; raise the input or prefix length or lower the range ratio so that prefix_len + floor(max(0, input_len - special) * (1 - range_ratio)) >= 1",
			p.InputLen, tok.NumSpecialTokensToAdd(), p.RangeRatio, minTotal)
	}
	if p.PrefixLen < 0 {
		return nil, fmt.Errorf("prefix length %d must not be negative", p.PrefixLen)
	}
	g := newRandomGen(s, tok)
	r := newNPGenerator(s.Seed)
	inLens, outLens, offsets, err := g.samplingParams(r, s.NumPrompts, p.RangeRatio, p.InputLen, p.OutputLen)
	if err != nil {
		return nil, err
	}
	var prefix []int
	for _, k := range r.integers(0, len(g.allowed), p.PrefixLen) {
		prefix = append(prefix, g.allowed[k])
	}
	samples := make([]Sample, s.NumPrompts)
	q := newDrawQueue(r, tok.BaseVocabSize(), s.NumPrompts)
	if err := parallel(ctx, len(samples), func(i int) {
		defer q.finish(i)
		prompt, n := g.sequence(prefix, inLens[i], offsets[i], i, q.drawer(i))
		samples[i] = Sample{Prompt: prompt, PromptLen: n, OutputLen: outLens[i], RequestID: s.RequestIDPrefix + strconv.Itoa(i)}
	}); err != nil {
		return nil, err
	}
	if p.BatchSize > 1 {
		samples = batch(samples, p.BatchSize, s.RequestIDPrefix)
	}
	return samples, nil
}

// batch groups samples into embeddings requests of size texts each, as
// vLLM's random dataset does for --random-batch-size.
func batch(samples []Sample, size int, prefix string) []Sample {
	var out []Sample
	for i := 0; i < len(samples); i += size {
		b := samples[i:min(i+size, len(samples))]
		s := Sample{RequestID: prefix + strconv.Itoa(i/size)}
		for _, x := range b {
			s.Inputs = append(s.Inputs, x.Prompt)
			s.PromptLen += x.PromptLen
		}
		out = append(out, s)
	}
	return out
}
