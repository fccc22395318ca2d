package dataset

import (
	"context"
	"errors"

	"github.com/servegate/servegate/benchtest/tokenizer"
)

var errNotImplemented = errors.New("not implemented yet")

func loadRandomRerank(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	return nil, errNotImplemented
}

func loadSpecBench(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	return nil, errNotImplemented
}

func loadSonnet(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	return nil, errNotImplemented
}

func loadBurstGPT(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	return nil, errNotImplemented
}

func loadPrefixRepetition(ctx context.Context, s Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	return nil, errNotImplemented
}
