//go:build !cgo

package sim

import "errors"

// loadTokenizer fails: the Hugging Face tokenizer needs cgo, and this binary
// was built without it. Leave --tokenizer empty to use the word tokenizer.
func loadTokenizer(path string) (Tokenizer, func() error, error) {
	return nil, nil, errors.New("load tokenizer " + path + ": this simulator was built without cgo, so it has no Hugging Face tokenizer; leave --tokenizer empty for the word tokenizer")
}
