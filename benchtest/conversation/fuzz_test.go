package conversation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/servegate/servegate/benchtest/dataset"
)

// fuzzLoad loads data as a file of the source's kind and fails unless it
// gives conversations or one *dataset.FileError naming that file.
func fuzzLoad(t *testing.T, src Source, data []byte) {
	path := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	src.Path = path
	convs, err := Load(context.Background(), src, "", loadLlama3(t), 1)
	if err == nil {
		checkCounts(t, convs)
		return
	}
	var fe *dataset.FileError
	if !errors.As(err, &fe) || fe.Path != path {
		t.Fatalf("error %v is not a file error naming %s", err, path)
	}
	if convs != nil {
		t.Fatalf("%d conversations with the error", len(convs))
	}
}

// FuzzConversationsFile: no input crashes the conversations file reader.
func FuzzConversationsFile(f *testing.F) {
	f.Add([]byte(goodConversations))
	f.Add([]byte(`[{"id": "a", "messages": [{"role": "user", "content": "x"}, {"role": "user", "content": "y"}]}]`))
	f.Add([]byte(`[{"id": 1}, 2, "x", null, [], {}]`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, Source{Kind: KindFile}, data) })
}

// FuzzShareGPT: no input crashes the ShareGPT conversion.
func FuzzShareGPT(f *testing.F) {
	data, err := os.ReadFile("testdata/sharegpt_parts.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`[{"id": "a_0", "conversations": [{"from": "gpt", "value": "é"}]}, {"id": "a_1", "conversations": [{"from": "gpt", "value": "ü"}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, Source{Kind: KindShareGPT, KeepASCII: true}, data) })
}

// FuzzTrace: no input crashes the trace reader.
func FuzzTrace(f *testing.F) {
	data, err := os.ReadFile("testdata/mooncake_readme.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("{\"timestamp\": 1e300, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [-9223372036854775808]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzLoad(t, Source{Kind: KindMooncake, BlockSize: 16}, data) })
}
