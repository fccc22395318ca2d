package tokenizer

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Bundled tokenizer names: real Hugging Face tokenizer.json files compiled
// into every binary that imports this package (gzip-compressed, about
// 2.5 MB), so the default tokenizer needs no download, no Go module cache
// and no source checkout. They are the files the github.com/daulet/tokenizers
// module ships in test/data (bundled/README.md says where each comes from).
const (
	// Llama3 is Meta-Llama-3-8B-Instruct's tokenizer (byte-level BPE,
	// 128,256 ids, BOS added to every sequence): the default.
	Llama3 = "llama3"
	// BERT is bert-base-uncased's tokenizer (WordPiece, [CLS]/[SEP] added).
	BERT = "bert"
)

//go:embed bundled/*.json.gz
var bundledFiles embed.FS

// BundledNames lists the bundled tokenizers' names, sorted.
func BundledNames() []string { return []string{BERT, Llama3} }

// IsBundled reports whether name is a bundled tokenizer's name.
func IsBundled(name string) bool { return slices.Contains(BundledNames(), name) }

// BundledJSON returns the tokenizer.json content of a bundled tokenizer,
// decompressed afresh on each call (about 40 ms for Llama-3's 9 MB) into
// a buffer of the size the gzip trailer gives: no copy is kept, so a
// process that loaded its tokenizer holds only the Rust side's tables.
func BundledJSON(name string) ([]byte, error) {
	if !IsBundled(name) {
		return nil, fmt.Errorf("bundled tokenizer %q: no such tokenizer (bundled: %v)", name, BundledNames())
	}
	gz, err := bundledFiles.ReadFile("bundled/" + name + ".json.gz")
	if err != nil {
		return nil, fmt.Errorf("bundled tokenizer %s: %w", name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil || len(gz) < 4 {
		return nil, fmt.Errorf("bundled tokenizer %s: %w", name, cmp.Or(err, io.ErrUnexpectedEOF))
	}
	// The trailer's size is the length modulo 2^32: exact for these files.
	data := make([]byte, binary.LittleEndian.Uint32(gz[len(gz)-4:]))
	if _, err := io.ReadFull(zr, data); err != nil {
		return nil, fmt.Errorf("bundled tokenizer %s: %w", name, err)
	}
	// Reading to the end checks the CRC and that nothing is left over.
	if n, err := io.Copy(io.Discard, zr); err != nil || n > 0 {
		return nil, fmt.Errorf("bundled tokenizer %s: %w", name, cmp.Or(err, errors.New("longer than its gzip trailer says")))
	}
	return data, nil
}

// Bundled loads a bundled tokenizer; its Name is the bundled name.
func Bundled(name string) (*Tokenizer, error) {
	data, err := BundledJSON(name)
	if err != nil {
		return nil, err
	}
	t, err := FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("bundled tokenizer %s: %w", name, err)
	}
	t.name = name
	return t, nil
}

// Load loads a tokenizer by name: a bundled name (llama3, bert), a
// tokenizer.json path or a directory holding one, or a model id found in
// the Hugging Face cache (downloaded only when hub.Download is set).
func Load(ctx context.Context, name string, hub Hub) (*Tokenizer, error) {
	if IsBundled(name) {
		return Bundled(name)
	}
	return FromPretrained(ctx, name, hub)
}
