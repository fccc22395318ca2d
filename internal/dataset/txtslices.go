package dataset

import (
	"context"
	"strconv"

	"github.com/servegate/servegate/internal/tokenizer"
)

// loadTxtSlices builds the txt-slices dataset (vLLM's TxtSlicesDataset):
// the whole text file is tokenized once, and each sample decodes
// InputLen - special tokens consecutive ids from a random start, wrapping
// around the end. PromptLen is InputLen as vLLM reports it (not a
// re-count). Start positions come from Python's random.Random(Seed),
// reproduced, so the prompts are vLLM's for the same seed. Only local files
// are read; vLLM also fetches http(s) URLs.
func loadTxtSlices(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	data, err := readFileLimited(s.Path)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fileErr(s.Path, 0, "the text file is empty")
	}
	ids := encodeText(tok, string(data))
	if len(ids) == 0 {
		return nil, fileErr(s.Path, 0, "the text has no tokens")
	}
	p := s.TxtSlices
	n := p.InputLen - tok.NumSpecialTokensToAdd()
	g := newRandomGen(s, tok)
	r := newPyRandom(s.Seed)
	samples := make([]Sample, s.NumPrompts)
	for i := range samples {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := r.below(len(ids))
		slice := make([]int, max(n, 0))
		for j := range slice {
			slice[j] = ids[(start+j)%len(ids)]
		}
		samples[i] = Sample{Prompt: g.decode(slice), PromptLen: p.InputLen, OutputLen: p.OutputLen, RequestID: s.RequestIDPrefix + strconv.Itoa(i)}
	}
	return samples, nil
}
