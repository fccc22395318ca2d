package conversation

import (
	"context"
	"errors"

	"github.com/servegate/servegate/tokenizer"
)

func readShareGPT(ctx context.Context, path string, src Source, tok *tokenizer.Tokenizer, seed int64) ([]Conversation, error) {
	return nil, errors.New("sharegpt source: not done yet")
}

func readTrace(ctx context.Context, path string, block int, tok *tokenizer.Tokenizer, seed int64) ([]Conversation, error) {
	return nil, errors.New("mooncake source: not done yet")
}
