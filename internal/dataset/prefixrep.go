package dataset

import (
	"context"
	"fmt"
	"strconv"

	"github.com/servegate/servegate/internal/tokenizer"
)

// loadPrefixRepetition builds the prefix_repetition dataset (vLLM's
// PrefixRepetitionRandomDataset): NumPrefixes random prefixes, each followed
// by NumPrompts/NumPrefixes random suffixes. Token ids are drawn from
// [0, BaseVocabSize) and fixed up to their exact lengths separately; the
// prompt is the decoded prefix and suffix ids, and its length is their sum.
// The prompts are shuffled unless DisableShuffle is set. Token ids come from
// numpy's legacy generator seeded with Seed and the shuffle from Python's
// random, both reproduced, so the prompts are vLLM's for the same seed. vLLM leaves these
// samples without request ids; servegate numbers them after the shuffle.
// Like vLLM, it returns NumPrefixes*(NumPrompts/NumPrefixes) samples, which
// may be fewer than NumPrompts, and never oversamples.
func loadPrefixRepetition(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	p := s.PrefixRepetition
	if p.NumPrefixes < 1 || p.PrefixLen < 0 || p.SuffixLen < 0 {
		return nil, fmt.Errorf("want at least one prefix and non-negative lengths, got %d prefixes of %d tokens, suffixes of %d", p.NumPrefixes, p.PrefixLen, p.SuffixLen)
	}
	perPrefix := s.NumPrompts / p.NumPrefixes
	if perPrefix == 0 {
		return nil, fmt.Errorf("num prompts (%d) must be greater than or equal to num prefixes (%d)", s.NumPrompts, p.NumPrefixes)
	}
	g := newRandomGen(s, tok)
	r := newNPLegacy(s.Seed)
	draw := func(n int) []int { return legacyRandInt(r, 0, tok.BaseVocabSize(), n) }
	exact := func(n int) []int {
		_, fixed := g.decodeToTarget(draw(n), n, draw)
		return fixed
	}
	// Token ids are drawn one prompt after another from one generator, as
	// vLLM does; only the final decoding runs in parallel.
	ids := make([][]int, 0, p.NumPrefixes*perPrefix)
	for range p.NumPrefixes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		prefix := exact(p.PrefixLen)
		for range perPrefix {
			ids = append(ids, append(append([]int(nil), prefix...), exact(p.SuffixLen)...))
		}
	}
	samples := make([]Sample, len(ids))
	if err := parallel(ctx, len(samples), func(k int) {
		samples[k] = Sample{Prompt: g.decode(ids[k]), PromptLen: len(ids[k]), OutputLen: p.OutputLen}
	}); err != nil {
		return nil, err
	}
	if !s.DisableShuffle {
		pyShuffle(newPyRandom(s.Seed), samples)
	}
	for i := range samples {
		samples[i].RequestID = s.RequestIDPrefix + strconv.Itoa(i)
	}
	return samples, nil
}
