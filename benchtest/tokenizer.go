package benchtest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/servegate/servegate/benchtest/tokenizer"
	"github.com/servegate/servegate/fixtures"
)

// Tokenizer fixture names a scenario's target.tokenizer may use.
var tokenizerFixtures = map[string]string{"llama3": fixtures.Llama3, "bert": fixtures.BERT}

var tokenizers sync.Map // resolved name -> *tokenizer.Tokenizer

// loadTokenizer resolves target.tokenizer: a fixture name (llama3, bert),
// a tokenizer.json path or directory, or a model id in the local Hugging
// Face cache. Empty means the model's tokenizer when it is cached, else the
// Llama-3 fixture. Nothing is downloaded. Tokenizers are loaded once per
// process.
func loadTokenizer(ctx context.Context, name, model string) (*tokenizer.Tokenizer, string, error) {
	if name == "" {
		if model != "" && !strings.HasPrefix(model, "servegate/") {
			if _, err := (tokenizer.Hub{}).Locate(model); err == nil {
				name = model
			}
		}
		if name == "" {
			name = "llama3"
		}
	}
	if t, ok := tokenizers.Load(name); ok {
		return t.(*tokenizer.Tokenizer), name, nil
	}
	var (
		tok *tokenizer.Tokenizer
		err error
	)
	if f, ok := tokenizerFixtures[name]; ok {
		var path string
		if path, err = fixtures.TokenizerPath(f); err == nil {
			tok, err = tokenizer.FromFile(path)
		}
	} else {
		tok, err = tokenizer.FromPretrained(ctx, name, tokenizer.Hub{})
	}
	if err != nil {
		return nil, "", fmt.Errorf("load tokenizer %s: %w", name, err)
	}
	t, _ := tokenizers.LoadOrStore(name, tok)
	return t.(*tokenizer.Tokenizer), name, nil
}
