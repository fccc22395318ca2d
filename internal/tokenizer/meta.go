package tokenizer

import (
	"encoding/json"
	"fmt"

	"github.com/servegate/servegate/internal/jsonscan"
)

// readMeta reads the parts of tokenizer.json that the Rust binding does not
// expose, in one pass over the file that allocates only for added_tokens:
// the vocabulary (128,256 entries for Llama-3) is counted, not decoded.
// Decoding the whole file with encoding/json, as before, cost about 170 ms
// and 30 MB of garbage on every load, a tenth of a short run's CPU.
func readMeta(data []byte) (meta fileMeta, err error) {
	s := jsonscan.New(data, nil)
	if s.Peek() != '{' {
		err = jsonscan.ErrSyntax
	} else {
		err = s.Object(func(key []byte) error {
			switch string(key) {
			case "added_tokens":
				start := s.Pos()
				if err := s.Skip(); err != nil {
					return err
				}
				return json.Unmarshal(data[start:s.Pos()], &meta.AddedTokens)
			case "model":
				if s.Peek() != '{' {
					return s.Skip()
				}
				return s.Object(func(key []byte) error {
					if string(key) != "vocab" {
						return s.Skip()
					}
					object, start := s.Peek() == '{', s.Pos()
					n, err := count(&s)
					meta.vocabLen = n
					if object && err == nil {
						meta.vocab = data[start:s.Pos()]
					}
					return err
				})
			}
			return s.Skip()
		})
	}
	if err == nil && !s.AtEnd() {
		err = jsonscan.ErrSyntax
	}
	if err != nil {
		return fileMeta{}, fmt.Errorf("parse tokenizer.json: offset %d: %w", s.Pos(), err)
	}
	return meta, nil
}

// count reads an object or an array and returns its number of members;
// null counts 0.
func count(s *jsonscan.Scanner) (int, error) {
	n := 0
	var err error
	switch s.Peek() {
	case '{':
		err = s.Object(func([]byte) error { n++; return s.Skip() })
	case '[':
		err = s.Array(func() error { n++; return s.Skip() })
	case 'n':
		err = s.Skip()
	default:
		err = jsonscan.ErrSyntax
	}
	return n, err
}

// vocabSize is the number of token strings with the added tokens, as the
// Rust library counts them (get_vocab_size(true)): the keys of the model's
// vocabulary and the non-empty contents of added_tokens, each once. Asking
// the library instead cost 20-35 ms on Llama-3, as it copies the whole
// vocabulary into a new map to count it. ok is false when the vocabulary
// is not an object (Unigram's list, whose pieces the library puts in a map
// and so counts once each), and the caller asks the library.
func (m fileMeta) vocabSize() (n int, ok bool) {
	if m.vocab == nil {
		return 0, false
	}
	added := map[string]bool{}
	for _, a := range m.AddedTokens {
		if a.Content != "" {
			added[a.Content] = false
		}
	}
	if len(added) == 0 {
		return m.vocabLen, true
	}
	s := jsonscan.New(m.vocab, nil)
	err := s.Object(func(key []byte) error {
		if _, in := added[string(key)]; in {
			added[string(key)] = true
		}
		return s.Skip()
	})
	if err != nil {
		return 0, false
	}
	n = m.vocabLen
	for _, inVocab := range added {
		if !inVocab {
			n++
		}
	}
	return n, true
}
