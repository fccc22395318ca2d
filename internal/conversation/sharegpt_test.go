package conversation

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/dataset"
)

// TestShareGPTMatchesVLLM converts the same ShareGPT file as vLLM's
// convert_sharegpt_to_openai.py did for the same options (the vllm_*.json
// files are its output) and checks that the conversations are the ones
// read from vLLM's output, in the same order.
func TestShareGPTMatchesVLLM(t *testing.T) {
	tests := []struct {
		want string
		seed int64
		src  Source
	}{
		{"vllm_sharegpt_seed0.json", 0, Source{}},
		{"vllm_sharegpt_seed99_max_items3.json", 99, Source{MaxItems: 3}},
		{"vllm_sharegpt_seed5_turns4-6_len5-100.json", 5, Source{MinTurns: 4, MaxTurns: 6, MinContentLen: 5, MaxContentLen: 100}},
		{"vllm_sharegpt_seed7_keep_ascii.json", 7, Source{KeepASCII: true}},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			src := tt.src
			src.Kind, src.Path = KindShareGPT, "sharegpt_parts.json"
			got := mustLoad(t, src, "testdata", tt.seed)
			want := mustLoad(t, Source{Kind: KindFile, Path: tt.want}, "testdata", 0)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %d conversations %v\nwant %d %v", len(got), ids(got), len(want), ids(want))
			}
		})
	}
}

func ids(convs []Conversation) []string {
	var out []string
	for _, c := range convs {
		out = append(out, c.ID)
	}
	return out
}

// TestShareGPTBadInput checks that a bad ShareGPT file is one error naming
// the file, the line and the field.
func TestShareGPTBadInput(t *testing.T) {
	tests := []struct {
		name, content string
		line          int
		in            []string
	}{
		{"syntax", "[\n{\"id\": \"a_0\", \"conversations\": [\n{\"from\": \"human\" \"value\": \"é\"}]}]", 3, []string{"malformed JSON"}},
		{"no conversations key", "[\n{\"id\": \"a_0\"},\n{\"id\": \"b_0\", \"convs\": []}]", 2, []string{"entry 0", "conversations: missing"}},
		{"value not a string", "[{\"id\": \"a_0\", \"conversations\": [\n{\"from\": \"human\", \"value\": \"é\"},\n{\"from\": \"gpt\", \"value\": null}]}]", 3, []string{"conversations[1].value: want a string, got null"}},
		{"unknown from", "[{\"id\": \"a_0\", \"conversations\": [\n{\"from\": \"human\", \"value\": \"é\"},\n{\"from\": \"robot\", \"value\": \"ü\"}]}]", 3, []string{`conversations[1].from: "robot"`}},
		{"id too long", "[\n{\"id\": \"" + strings.Repeat("y", MaxIDBytes+1) + "_0\", \"conversations\": []}]", 2, []string{"entry 0: id: 259 bytes is over the maximum 256"}},
		{"id with two underscores", "[\n{\"id\": \"a_b_0\", \"conversations\": []}]", 2, []string{"id", "more than one"}},
		// encoding/json would read the byte as U+FFFD, which made an ASCII
		// message count as non-ASCII; vLLM's converter refuses the file.
		{"value not UTF-8", "[{\"id\": \"a_0\", \"conversations\": [\n{\"from\": \"human\", \"value\": \"plain \x80\"},\n{\"from\": \"gpt\", \"value\": \"\u00fc\"}]}]", 2, []string{"entry 0: conversations[0].value: byte 0x80 is not UTF-8"}},
		{"from not UTF-8", "[{\"id\": \"a_0\", \"conversations\": [\n{\"from\": \"human\", \"value\": \"\u00e9\"},\n{\"from\": \"gp\xf0\x9f\", \"value\": \"\u00fc\"}]}]", 3, []string{"entry 0: conversations[1].from: byte 0xf0 is not UTF-8"}},
		{"nothing kept", `[{"id": "a_0", "conversations": [{"from": "human", "value": "ascii"}, {"from": "gpt", "value": "only"}]}]`, 0, []string{"kept no conversation of 1", "1 with a plain-ASCII message", "keep_ascii"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "sharegpt.json", tt.content)
			convs, err := Load(context.Background(), Source{Kind: KindShareGPT, Path: path}, "", loadLlama3(t), 0)
			var fe *dataset.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v (%d conversations), want a file error", err, len(convs))
			}
			if fe.Path != path || fe.Line != tt.line {
				t.Errorf("error at line %d, want %d: %v", fe.Line, tt.line, err)
			}
			for _, s := range tt.in {
				if !strings.Contains(fe.Msg, s) {
					t.Errorf("error %q does not say %q", fe.Msg, s)
				}
			}
		})
	}
	// An id without "_" is its own conversation (vLLM's script fails on it).
	path := writeFile(t, "sharegpt.json", `[{"id": "solo", "conversations": [{"from": "human", "value": "é"}, {"from": "gpt", "value": "ü"}]}]`)
	convs := mustLoad(t, Source{Kind: KindShareGPT, Path: filepath.Base(path)}, filepath.Dir(path), 0)
	if len(convs) != 1 || convs[0].ID != "solo" || len(convs[0].Turns) != 1 {
		t.Errorf("got %+v", convs)
	}
}
