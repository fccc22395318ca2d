package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// jsonMeta is readMeta done with encoding/json, the reference.
func jsonMeta(tb testing.TB, data []byte) fileMeta {
	tb.Helper()
	var v struct {
		fileMeta
		Model struct {
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
	}
	require.NoError(tb, json.Unmarshal(data, &v))
	m := v.fileMeta
	var asMap map[string]json.RawMessage
	var asList []json.RawMessage
	if json.Unmarshal(v.Model.Vocab, &asMap) == nil && asMap != nil {
		m.vocabLen = len(asMap)
		m.vocab = v.Model.Vocab
	} else if json.Unmarshal(v.Model.Vocab, &asList) == nil {
		m.vocabLen = len(asList)
	}
	return m
}

func TestReadMetaMatchesEncodingJSON(t *testing.T) {
	docs := map[string]string{
		"bpe":      `{"version":"1.0","added_tokens":[{"id":3,"content":"<s>","special":true},{"id":4,"content":"x","special":false}],"model":{"type":"BPE","vocab":{"a":0,"b\"}":1,"\\\\":2},"merges":["a b"]}}`,
		"unigram":  ` { "model" : { "vocab" : [ ["▁a", -1.5e3], ["b", 0], ["{", -2] ] , "type":"Unigram"}, "added_tokens" : [ ] } `,
		"no vocab": `{"added_tokens":[{"id":0,"content":"[PAD]","special":true}],"model":{"type":"WordLevel"}}`,
		"null":     `{"model":{"vocab":null},"added_tokens":null,"normalizer":{"x":[true,false,null,{"y":"\u00e9"}]}}`,
		"empty":    `{}`,
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			got, err := readMeta([]byte(doc))
			require.NoError(t, err)
			require.Equal(t, jsonMeta(t, []byte(doc)), got)
		})
	}
	for _, name := range BundledNames() {
		data, err := BundledJSON(name)
		require.NoError(t, err)
		got, err := readMeta(data)
		require.NoError(t, err)
		require.Equal(t, jsonMeta(t, data), got, name)
	}
}

// TestReadMetaBadJSON cuts a document at every byte, and breaks it in
// other ways: each is an error, never a panic.
func TestReadMetaBadJSON(t *testing.T) {
	doc := `{"added_tokens":[{"id":3,"content":"<\"s>","special":true}],"model":{"vocab":{"a":0,"b\\":1},"x":[1.5,-2e3,true]}}`
	for i := range len(doc) {
		_, err := readMeta([]byte(doc[:i]))
		require.Error(t, err, "cut at %d: %q", i, doc[:i])
	}
	for _, bad := range []string{
		`[]`, `{"model":{"vocab":"x"}}`, `{"model":{"vocab":{"a" 0}}}`, `{"a":tru}`,
		`{"a":1} {}`, `{"added_tokens":[{"id":"three"}]}`, `{"a":1,}`, `{"a":"\`,
	} {
		_, err := readMeta([]byte(bad))
		require.ErrorContains(t, err, "parse tokenizer.json", bad)
	}
}

// TestVocabSizeMatchesLibrary checks the vocabulary size read from the
// file against the Rust library's count, on the shipped and bundled
// tokenizers and on small files with added tokens inside and outside the
// vocabulary, repeated, empty or written with escapes.
func TestVocabSizeMatchesLibrary(t *testing.T) {
	bpe := func(added string) []byte {
		return []byte(`{"version": "1.0", "added_tokens": [` + added + `], "model": {"type": "BPE",
			"vocab": {"a": 0, "b": 1, "ab": 2, "\u0043": 3, "<s>": 4}, "merges": ["a b"]}}`)
	}
	tok := func(id int, content string, special bool) string {
		return fmt.Sprintf(`{"id": %d, "content": %q, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": %t}`, id, content, special)
	}
	files := map[string][]byte{
		"no added":         bpe(""),
		"added in vocab":   bpe(tok(4, "<s>", true)),
		"added outside":    bpe(tok(5, "<pad>", true) + "," + tok(6, "xyz", false)),
		"escaped key":      bpe(tok(3, "C", false) + "," + tok(5, "<pad>", true)),
		"repeated content": bpe(tok(5, "<pad>", true) + "," + tok(6, "<pad>", true)),
		"empty content":    bpe(tok(5, "", true)),
		"unigram list":     []byte(`{"added_tokens": [` + tok(0, "<unk>", true) + `], "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0], ["a", -2.0]]}}`),
	}
	mod, err := fixtures.TokenizersModuleDir()
	require.NoError(t, err)
	shipped, err := filepath.Glob(filepath.Join(mod, "test", "data", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, shipped)
	for _, path := range shipped {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		files[filepath.Base(path)] = data
	}
	for _, name := range BundledNames() {
		data, err := BundledJSON(name)
		require.NoError(t, err)
		files["bundled "+name] = data
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			tk, err := FromBytes(data)
			require.NoError(t, err)
			defer tk.Close()
			require.Equal(t, int(tk.tk.VocabSize()), tk.VocabSize())
		})
	}
}
