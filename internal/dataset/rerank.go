package dataset

import (
	"context"
	"errors"
	"strconv"

	"github.com/servegate/servegate/internal/tokenizer"
)

// loadRandomRerank builds the random-rerank dataset (vLLM's
// RandomDatasetForReranking): one random query shared by every request and
// NumPrompts random documents grouped BatchSize to a request. For a
// reranker, the query takes half the input length less one separator token
// and each document the rest; otherwise (NoReranker) query and documents each
// take the whole input length and the query is sent as the first embedding
// input. Samples carry no output length and are never oversampled.
func loadRandomRerank(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	p := s.Random
	reranker := !p.NoReranker
	sep := 0
	queryParam := p.InputLen
	if reranker {
		sep = 1
		queryParam = p.InputLen/2 - sep
	}
	g := newRandomGen(s, tok)
	r := newNPGenerator(s.Seed)
	qLens, _, qOffsets, err := g.samplingParams(r, 1, p.RangeRatio, queryParam, 0)
	if err != nil {
		return nil, err
	}
	n, size, docParam := s.NumPrompts, p.BatchSize, p.InputLen-qLens[0]-sep
	if !reranker {
		if n <= 1 || size <= 1 {
			return nil, errors.New("without a reranker, random-rerank needs more than one prompt and a batch size above one (the query takes one slot of each)")
		}
		n, size, docParam = n-1, size-1, p.InputLen
	}
	dLens, _, dOffsets, err := g.samplingParams(r, n, p.RangeRatio, docParam, 0)
	if err != nil {
		return nil, err
	}
	q := newDrawQueue(r, tok.BaseVocabSize(), n+1)
	query, queryLen := g.sequence(nil, qLens[0], qOffsets[0], 0, q.drawer(0))
	q.finish(0)
	docs := make([]string, n)
	docLens := make([]int, n)
	if err := parallel(ctx, n, func(i int) {
		defer q.finish(i + 1)
		docs[i], docLens[i] = g.sequence(nil, dLens[i], dOffsets[i], i+1, q.drawer(i+1))
	}); err != nil {
		return nil, err
	}
	var samples []Sample
	for i := 0; i < n; i += size {
		end := min(i+size, n)
		x := Sample{RequestID: s.RequestIDPrefix + strconv.Itoa(i/size)}
		if reranker {
			x.Prompt, x.Documents = query, docs[i:end:end]
			x.PromptLen = (queryLen + sep) * (end - i)
		} else {
			x.Inputs = append([]string{query}, docs[i:end]...)
			x.PromptLen = queryLen
		}
		for _, l := range docLens[i:end] {
			x.PromptLen += l
		}
		samples = append(samples, x)
	}
	return samples, nil
}
