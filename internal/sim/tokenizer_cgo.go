//go:build cgo

package sim

import "github.com/servegate/servegate/internal/tokenizer"

// loadTokenizer loads a Hugging Face tokenizer.json with the real tokenizer.
func loadTokenizer(path string) (Tokenizer, func() error, error) {
	tk, err := tokenizer.FromFile(path)
	if err != nil {
		return nil, nil, err
	}
	return tk, tk.Close, nil
}
