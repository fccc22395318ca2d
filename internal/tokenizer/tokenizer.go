// Package tokenizer is servegate's one tokenizer: a thin layer over
// github.com/daulet/tokenizers, which runs the real Hugging Face tokenizers
// library (Rust) through cgo. Token counts therefore match what a vLLM server
// that loads the same tokenizer.json counts.
//
// Linking needs libtokenizers.a on the linker's search path. The setup
// command builds it once per machine (or takes a prebuilt one) and adds its
// directory to CGO_LDFLAGS with `go env -w`, so a plain `go test ./...`
// links in any module, this repository included:
//
//	go run github.com/servegate/servegate/ci/cmd/setup
//
// The package names no library directory itself: a directory relative to
// its source would exist only in servegate's own checkout, never in a
// user's module cache.
package tokenizer

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/daulet/tokenizers"
)

// A Tokenizer encodes text to token ids and decodes ids to text.
//
// A Tokenizer is safe for concurrent use: the underlying Rust tokenizer is
// immutable after loading (Encode and Decode take it by shared reference), and
// a read-write lock only keeps Close from freeing it under a running call.
type Tokenizer struct {
	mu sync.RWMutex
	tk *tokenizers.Tokenizer

	name          string
	vocabSize     int
	baseVocabSize int
	specialIDs    []int
	numSpecialAdd int
}

// FromFile loads a tokenizer from a Hugging Face tokenizer.json file.
func FromFile(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	t.name = path
	return t, nil
}

// FromBytes loads a tokenizer from the contents of a tokenizer.json file.
func FromBytes(data []byte) (*Tokenizer, error) {
	trimCHeap()
	meta, err := readMeta(data)
	if err != nil {
		return nil, err
	}
	tk, err := tokenizers.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t := &Tokenizer{tk: tk, name: "tokenizer.json"}
	if n, ok := meta.vocabSize(); ok {
		t.vocabSize = n
	} else {
		t.vocabSize = int(tk.VocabSize())
	}
	t.baseVocabSize = meta.baseVocabSize()
	if t.baseVocabSize == 0 {
		t.baseVocabSize = t.vocabSize
	}
	t.specialIDs = meta.specialIDs()
	t.numSpecialAdd = len(t.encode("", true))
	return t, nil
}

// fileMeta holds the parts of tokenizer.json that the Rust binding does not
// expose: the added tokens and the size of the model's own vocabulary.
type fileMeta struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	// vocabLen is the number of entries of model.vocab: BPE and WordPiece
	// store the vocabulary as an object, Unigram as a list.
	vocabLen int
	// vocab is model.vocab's text when it is an object, else nil.
	vocab []byte
}

func (m fileMeta) specialIDs() []int {
	var ids []int
	for _, a := range m.AddedTokens {
		if a.Special {
			ids = append(ids, a.ID)
		}
	}
	sort.Ints(ids)
	return ids
}

// baseVocabSize is the size of the model vocabulary without added tokens, as
// Hugging Face transformers reports it in tokenizer.vocab_size.
func (m fileMeta) baseVocabSize() int { return m.vocabLen }

// Name is the file the tokenizer was loaded from, or the model id.
func (t *Tokenizer) Name() string { return t.name }

// Encode returns the token ids of text. With addSpecial, the tokenizer's
// post-processor adds its special tokens (BOS for Llama-3, CLS/SEP for BERT).
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.encode(text, addSpecial)
}

func (t *Tokenizer) encode(text string, addSpecial bool) []int {
	if t.tk == nil {
		return nil
	}
	enc := t.tk.EncodeWithOptions(text, addSpecial)
	ids := make([]int, len(enc.IDs))
	for i, id := range enc.IDs {
		ids[i] = int(id)
	}
	return ids
}

// Count returns the number of tokens in text without special tokens, the way
// vLLM's benchmark counts generated text.
func (t *Tokenizer) Count(text string) int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.tk == nil || text == "" {
		return 0
	}
	return len(t.tk.EncodeWithOptions(text, false).IDs)
}

// Decode turns token ids back into text. Ids outside the vocabulary are
// ignored by the underlying library.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	u := make([]uint32, len(ids))
	for i, id := range ids {
		u[i] = uint32(id)
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.tk == nil {
		return ""
	}
	return t.tk.Decode(u, skipSpecial)
}

// VocabSize is the number of token ids including added tokens (len(tokenizer)
// in transformers).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// BaseVocabSize is the model vocabulary without added tokens
// (tokenizer.vocab_size in transformers; 128000 for Llama-3).
func (t *Tokenizer) BaseVocabSize() int { return t.baseVocabSize }

// SpecialIDs returns the ids of the added tokens marked special, ascending.
func (t *Tokenizer) SpecialIDs() []int { return append([]int(nil), t.specialIDs...) }

// NumSpecialTokensToAdd is the number of special tokens the tokenizer adds to
// a single sequence (transformers' num_special_tokens_to_add(pair=False)).
func (t *Tokenizer) NumSpecialTokensToAdd() int { return t.numSpecialAdd }

// Close frees the native tokenizer. Calls after Close return empty results.
func (t *Tokenizer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tk == nil {
		return nil
	}
	err := t.tk.Close()
	t.tk = nil
	return err
}

// ErrNotCached reports that a model's tokenizer is not in the local Hugging
// Face cache and the caller did not allow a download.
var ErrNotCached = errors.New("tokenizer not in the local Hugging Face cache")
