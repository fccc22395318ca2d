package conversation

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/dataset"
)

// TestSizeLimits checks that files past the size limits are refused with
// the file (and the line of a trace) before they are read into memory.
// The limits are lowered for the test; the real ones are MaxFileBytes and
// MaxLineBytes.
func TestSizeLimits(t *testing.T) {
	defer func(f int64, l, tot int) { fileLimit, lineLimit, totalLimit = f, l, tot }(fileLimit, lineLimit, totalLimit)
	fileLimit, lineLimit, totalLimit = 1000, 200, 25
	long := `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [` + strings.Repeat("1, ", 100) + "1]}\n"
	ok := `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}` + "\n"
	tests := []struct {
		name, file, content string
		src                 Source
		line                int
		in                  string
	}{
		{"conversations file", "c.json", "[" + strings.Repeat(" ", 1000) + "]", Source{Kind: KindFile}, 0, "over the maximum 1000"},
		{"sharegpt file", "s.json", "[" + strings.Repeat(" ", 1000) + "]", Source{Kind: KindShareGPT}, 0, "over the maximum 1000"},
		{"text file", "t.txt", strings.Repeat("word ", 300), Source{Kind: KindSynthetic, Synthetic: Synthetic{NumConversations: 1,
			PromptInput: PromptInput{NumTurns: constant(2), NumTokens: constant(10)}, PromptOutput: PromptOutput{NumTokens: constant(1)}}}, 0, "over the maximum 1000"},
		{"trace line", "t.jsonl", ok + ok + long, Source{Kind: KindMooncake}, 3, "longer than 200 bytes"},
		{"trace tokens", "t.jsonl", ok + ok + ok, Source{Kind: KindMooncake}, 3, "over 25 tokens; replay a window of the trace with max_requests"},
		{"file tokens", "c.json", `[{"id": "a", "messages": [{"role": "user", "content": "` + strings.Repeat("word ", 30) + `"}]}]`, Source{Kind: KindFile}, 1, "over 25 tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.file, tt.content)
			src := tt.src
			if src.Kind == KindSynthetic {
				src.TextFiles = []string{path}
			} else {
				src.Path = path
			}
			_, err := Load(context.Background(), src, "", loadLlama3(t), 0)
			var fe *dataset.FileError
			if !errors.As(err, &fe) || fe.Path != path || fe.Line != tt.line || !strings.Contains(fe.Msg, tt.in) {
				t.Fatalf("got %v, want %s:%d: ...%s", err, path, tt.line, tt.in)
			}
		})
	}
}

// TestTextFilesTogether: each text file is under the size limit, but a
// synthetic source that names many (or one many times) must not read
// MaxTextFiles times MaxFileBytes into memory: the files together are
// held to the same limit, and the file that crosses it is named.
func TestTextFilesTogether(t *testing.T) {
	defer func(f int64) { fileLimit = f }(fileLimit)
	fileLimit = 1000
	path := writeFile(t, "t.txt", strings.Repeat("word ", 120)) // 600 bytes
	src := Source{Kind: KindSynthetic, Synthetic: Synthetic{NumConversations: 1, TextFiles: []string{path, path, path},
		PromptInput: PromptInput{NumTurns: constant(2), NumTokens: constant(10)}, PromptOutput: PromptOutput{NumTokens: constant(1)}}}
	_, err := Load(context.Background(), src, "", loadLlama3(t), 0)
	var fe *dataset.FileError
	if !errors.As(err, &fe) || fe.Path != path || !strings.Contains(fe.Msg, "text_files together") {
		t.Fatalf("got %v, want an error naming %s: text_files together ...", err, path)
	}
	src.TextFiles = []string{path}
	if _, err := Load(context.Background(), src, "", loadLlama3(t), 0); err != nil {
		t.Fatalf("one file under the limit: %v", err)
	}
}
