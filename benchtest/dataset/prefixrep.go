package dataset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/servegate/servegate/benchtest/tokenizer"
)

// Streams of the prefix_repetition dataset: one generator per prefix and
// one per suffix, so that prompts can be built in parallel.
const (
	streamPrefix uint64 = 0x70726566 << 32 // "pref"
	streamSuffix uint64 = 0x73756666 << 32 // "suff"
)

// loadPrefixRepetition builds the prefix_repetition dataset (vLLM's
// PrefixRepetitionRandomDataset): NumPrefixes random prefixes, each followed
// by NumPrompts/NumPrefixes random suffixes. Token ids are drawn from
// [0, BaseVocabSize) and fixed up to their exact lengths separately; the
// prompt is the decoded prefix and suffix ids, and its length is their sum.
// The prompts are shuffled unless DisableShuffle is set. vLLM leaves these
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
	exact := func(r *rand.Rand, n int) []int {
		ids := integers(r, 0, tok.BaseVocabSize(), n)
		_, fixed, _ := g.decodeToTarget(ids, n, r)
		return fixed
	}
	prefixes := make([][]int, p.NumPrefixes)
	if err := parallel(ctx, p.NumPrefixes, func(i int) {
		prefixes[i] = exact(newRNG(s.Seed, streamPrefix|uint64(i)), p.PrefixLen)
	}); err != nil {
		return nil, err
	}
	samples := make([]Sample, p.NumPrefixes*perPrefix)
	if err := parallel(ctx, len(samples), func(k int) {
		ids := append(append([]int(nil), prefixes[k/perPrefix]...), exact(newRNG(s.Seed, streamSuffix|uint64(k)), p.SuffixLen)...)
		samples[k] = Sample{Prompt: g.decode(ids), PromptLen: len(ids), OutputLen: p.OutputLen}
	}); err != nil {
		return nil, err
	}
	if !s.DisableShuffle {
		shuffle(newRNG(s.Seed, streamShuffle), samples)
	}
	for i := range samples {
		samples[i].RequestID = s.RequestIDPrefix + strconv.Itoa(i)
	}
	return samples, nil
}
