package benchtest

import (
	"context"
	"fmt"
	"sync"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/tokenizer"
)

var tokenizers sync.Map // resolved name -> *tokenizer.Tokenizer

// loadTokenizer loads target.tokenizer as scenario.ResolveTokenizer resolves
// it. Nothing is downloaded. Tokenizers are loaded once per process.
func loadTokenizer(ctx context.Context, name, model string) (*tokenizer.Tokenizer, string, error) {
	name = scenario.ResolveTokenizer(name, model)
	if t, ok := tokenizers.Load(name); ok {
		return t.(*tokenizer.Tokenizer), name, nil
	}
	tok, err := tokenizer.Load(ctx, name, tokenizer.Hub{})
	if err != nil {
		return nil, "", fmt.Errorf("load tokenizer %s: %w", name, err)
	}
	t, _ := tokenizers.LoadOrStore(name, tok)
	return t.(*tokenizer.Tokenizer), name, nil
}
