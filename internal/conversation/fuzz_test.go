package conversation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/servegate/servegate/internal/dataset"
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

// FuzzGenerateConfig: no input crashes the generator configuration
// reader; a bad file is one *dataset.FileError naming it, and a good one
// draws whole numbers within their ceiling from every distribution.
func FuzzGenerateConfig(f *testing.F) {
	data, err := os.ReadFile("testdata/generate_multi_turn.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"filetype": "generate_conversations", "num_conversations": 1, "prompt_input": {"num_turns": {"distribution": "zipf", "alpha": 1.0000001, "max": 7}, "num_tokens": {"distribution": "poisson", "alpha": 1e9}}, "prompt_output": {"num_tokens": {"distribution": "lognormal", "mean": 1e9, "sigma": 100}}}`))
	f.Add([]byte(`{"filetype": "generate_conversations", "prompt_input": {"num_turns": {"distribution": "uniform", "min": 3, "max": 2.5}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "gen.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ReadGenerateConfig(path)
		if err != nil {
			var fe *dataset.FileError
			if !errors.As(err, &fe) || fe.Path != path || fe.Line < 0 {
				t.Fatalf("error %v is not a file error naming %s", err, path)
			}
			return
		}
		r := NewRand(1)
		for _, d := range []*Distribution{s.PromptInput.NumTurns, s.PromptInput.CommonPrefixNumTokens, s.PromptInput.PrefixNumTokens, s.PromptInput.NumTokens, s.PromptOutput.NumTokens} {
			if d == nil {
				continue
			}
			for range 20 {
				if v := d.Int(r, 1000); v < 0 || v > 1000 {
					t.Fatalf("%+v drew %d, outside [0, 1000]", *d, v)
				}
			}
		}
	})
}
