package conversation

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

// defaultText is the text synthetic conversations are cut from when a
// source names no text_files: the sonnet lines servegate's tests use for
// the sonnet dataset (fixtures/datasets/sonnet.txt, written for the
// project), bundled so that a synthetic source needs no file. It is short
// (about 200 tokens), so conversations cycle through it; give text_files
// (vLLM's README suggests Project Gutenberg's pg1184.txt) for varied text.
//
//go:embed text/sonnet.txt
var defaultText string

// A corpus is the token ids of a source's text, read cyclically: an
// offset past the end wraps to the start, where vLLM's generator stops
// with "Not enough input text".
type corpus struct {
	ids []int
}

// readCorpus tokenizes the text files (resolved against baseDir when
// relative) one after another, as vLLM concatenates their token ids, or
// the bundled text when there are none. The files together hold at most
// MaxFileBytes.
func readCorpus(files []string, baseDir string, tok *tokenizer.Tokenizer) (*corpus, error) {
	c := &corpus{}
	if len(files) == 0 {
		c.ids = dataset.EncodeText(tok, defaultText)
	}
	var total int64
	for _, name := range files {
		path := resolve(baseDir, name)
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("text file: %w", err)
		}
		if st.Size() > fileLimit {
			return nil, fileErr(path, 0, "%d bytes is over the maximum %d for a text file", st.Size(), fileLimit)
		}
		// The files together are held to one file's limit: up to
		// MaxTextFiles files of MaxFileBytes each would not fit in memory.
		if total += st.Size(); total > fileLimit {
			return nil, fileErr(path, 0, "the text_files together hold over the maximum %d bytes", fileLimit)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("text file: %w", err)
		}
		c.ids = append(c.ids, dataset.EncodeText(tok, string(data))...)
	}
	if len(c.ids) == 0 {
		return nil, fmt.Errorf("text files %v: no text to cut conversations from", files)
	}
	return c, nil
}

// slice returns n token ids from offset start, wrapping around the end.
func (c *corpus) slice(start, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = c.ids[(start+i)%len(c.ids)]
	}
	return out
}

// resolve returns name joined to baseDir unless it is absolute.
func resolve(baseDir, name string) string {
	if filepath.IsAbs(name) || baseDir == "" {
		return name
	}
	return filepath.Join(baseDir, name)
}
