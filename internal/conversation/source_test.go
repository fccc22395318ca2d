package conversation

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourceValidate checks the file kinds' keys: each bad value is a
// FieldError on its key that says what is wrong.
func TestSourceValidate(t *testing.T) {
	tests := []struct {
		name  string
		src   Source
		field string
		in    string
	}{
		{"file without path", Source{Kind: KindFile}, "path", "missing"},
		{"mooncake without path", Source{Kind: KindMooncake, BlockSize: 16}, "path", "missing"},
		{"sharegpt key on a file", Source{Kind: KindFile, Path: "c.json", MaxItems: 3}, "max_items", "not a key of a file source"},
		{"synthetic key on a trace", Source{Kind: KindMooncake, Path: "t.jsonl", Synthetic: Synthetic{NumConversations: 3}}, "num_conversations", "not a key of a mooncake source"},
		{"negative max_items", Source{Kind: KindShareGPT, Path: "s.json", MaxItems: -1}, "max_items", "negative"},
		{"max_items over", Source{Kind: KindShareGPT, Path: "s.json", MaxItems: MaxConversations + 1}, "max_items", "over the maximum 1000000"},
		{"min over max turns", Source{Kind: KindShareGPT, Path: "s.json", MinTurns: 6, MaxTurns: 4}, "min_turns", "over max_turns 4"},
		{"min over max content", Source{Kind: KindShareGPT, Path: "s.json", MinContentLen: 60, MaxContentLen: 40}, "min_content_len", "over max_content_len"},
		{"block size over", Source{Kind: KindMooncake, Path: "t.jsonl", BlockSize: MaxBlockSize + 1}, "block_size", "over the maximum 65536"},
		{"negative block size", Source{Kind: KindMooncake, Path: "t.jsonl", BlockSize: -512}, "block_size", "negative"},
		{"too many text files", Source{Kind: KindSynthetic, Synthetic: Synthetic{NumConversations: 1, TextFiles: make([]string, MaxTextFiles+1)}}, "text_files", "over the maximum 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.src.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Msg, tt.in) {
				t.Fatalf("Validate() = %v, want %s: ...%s", err, tt.field, tt.in)
			}
		})
	}
	for _, ok := range []Source{
		{Kind: KindFile, Path: "c.json"},
		{Kind: KindShareGPT, Path: "s.json", MaxItems: 128, MinTurns: 2, MaxTurns: 20, MinContentLen: 1, MaxContentLen: 1000, KeepASCII: true},
		{Kind: KindMooncake, Path: "t.jsonl"},
		{Kind: KindMooncake, Path: "t.jsonl", BlockSize: MaxBlockSize},
		{Kind: KindSynthetic, Path: "generate_multi_turn.json"},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

// TestMissingFiles: a file that is not there is an error naming it, for
// every kind.
func TestMissingFiles(t *testing.T) {
	synth := Synthetic{NumConversations: 1, TextFiles: []string{"nope.txt"},
		PromptInput: PromptInput{NumTurns: constant(2), NumTokens: constant(10)}, PromptOutput: PromptOutput{NumTokens: constant(1)}}
	for _, src := range []Source{
		{Kind: KindSynthetic, Synthetic: synth},
		{Kind: KindSynthetic, Path: "nope.json"},
		{Kind: KindFile, Path: "nope.json"},
		{Kind: KindShareGPT, Path: "nope.json"},
		{Kind: KindMooncake, Path: "nope.jsonl"},
	} {
		convs, err := Load(context.Background(), src, "testdata", loadLlama3(t), 0)
		if err == nil || !strings.Contains(err.Error(), filepath.Join("testdata", "nope.")) || convs != nil {
			t.Errorf("%s source: %v", src.Kind, err)
		}
	}
}
