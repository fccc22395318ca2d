package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/servegate/servegate/internal/tokenizer"
)

var tokenizers sync.Map // name -> *tokenizer.Tokenizer

// loadTokenizer loads a tokenizer by the name tokenizer.Load takes, once
// per process: the plan's tokenizer and an inproc simulator's are the same
// object. hub says whether a model id missing from the cache may be
// downloaded.
func loadTokenizer(ctx context.Context, name string, hub tokenizer.Hub) (*tokenizer.Tokenizer, error) {
	if t, ok := tokenizers.Load(name); ok {
		return t.(*tokenizer.Tokenizer), nil
	}
	tok, err := tokenizer.Load(ctx, name, hub)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", name, err)
	}
	t, loaded := tokenizers.LoadOrStore(name, tok)
	if loaded {
		tok.Close()
	}
	return t.(*tokenizer.Tokenizer), nil
}
