package conversation

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/dataset"
)

const goodConversations = `[
  {"id": "a", "messages": [
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "The capital of France is Paris."},
    {"role": "user", "content": "And of Italy?"},
    {"role": "assistant", "content": ""}
  ]},
  {"id": "b", "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Name three colours."},
    {"role": "assistant", "content": "Red, green, blue."},
    {"role": "user", "content": "Two more?"}
  ]}
]`

// TestConversationsFile reads vLLM's multi-turn input format: user turns,
// max tokens from the next assistant message, an optional system message.
func TestConversationsFile(t *testing.T) {
	path := writeFile(t, "convs.json", goodConversations)
	convs := mustLoad(t, Source{Kind: KindFile, Path: filepath.Base(path)}, filepath.Dir(path), 0)
	tok := loadLlama3(t)
	want := []Conversation{
		{ID: "a", Turns: []Turn{
			{User: "What is the capital of France?", MaxTokens: tok.Count("The capital of France is Paris.")},
			{User: "And of Italy?", MaxTokens: 1},
		}},
		{ID: "b", System: "You are terse.", Turns: []Turn{
			{User: "Name three colours.", MaxTokens: tok.Count("Red, green, blue.")},
			{User: "Two more?", MaxTokens: 0},
		}},
	}
	if len(convs) != len(want) {
		t.Fatalf("%d conversations, want %d", len(convs), len(want))
	}
	for i, c := range convs {
		w := want[i]
		if c.ID != w.ID || c.System != w.System || len(c.Turns) != len(w.Turns) {
			t.Fatalf("conversation %d: %+v, want %+v", i, c, w)
		}
		for k, turn := range c.Turns {
			w.Turns[k].UserTokens = tok.Count(w.Turns[k].User)
			if turn != w.Turns[k] {
				t.Errorf("conversation %d turn %d: %+v, want %+v", i, k, turn, w.Turns[k])
			}
		}
	}
	if want[0].Turns[0].MaxTokens < 5 {
		t.Errorf("the answer counts %d tokens", want[0].Turns[0].MaxTokens)
	}
}

// TestConversationsFileNUL counts a message holding a NUL byte in full
// (the tokenizer binding alone stops at it).
func TestConversationsFileNUL(t *testing.T) {
	path := writeFile(t, "convs.json", `[{"id": "a", "messages": [{"role": "user", "content": "before\u0000after the NUL byte"}, {"role": "assistant", "content": "x\u0000y"}]}]`)
	convs := mustLoad(t, Source{Kind: KindFile, Path: path}, "", 0)
	checkCounts(t, convs)
	turn := convs[0].Turns[0]
	if turn.User != "before\x00after the NUL byte" || turn.UserTokens <= loadLlama3(t).Count(turn.User) || turn.MaxTokens < 3 {
		t.Errorf("got %+v", turn)
	}
}

// TestConversationsFileBadInput checks that each bad file is one error
// naming the file, the line and the field.
func TestConversationsFileBadInput(t *testing.T) {
	tests := []struct {
		name, content string
		line          int
		in            []string
	}{
		{"syntax error", "[\n {\"id\": \"a\", \"messages\": [\n  {\"role\": \"user\" \"content\": \"hi\"}\n ]}\n]", 3, []string{"malformed JSON"}},
		{"truncated", "[\n {\"id\": \"a\", \"messages\": [\n  {\"role\": \"user\", \"content\": \"hi\"}\n", 3, []string{"malformed JSON"}},
		{"not a list", "{\"id\": \"a\"}", 1, []string{"filetype: missing", "a conversations file is a JSON list"}},
		{"a number", "42", 1, []string{"want a JSON list"}},
		{"not alternating", `[
 {"id": "a", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
 {"id": "b", "messages": [
   {"role": "user", "content": "one"},
   {"role": "assistant", "content": "two"},
   {"role": "user", "content": "three"},
   {"role": "user", "content": "four"}
 ]}
]`, 7, []string{`conversation 1 (id "b")`, "messages[3].role", `"user" where "assistant" belongs`}},
		{"assistant first", "[\n{\"id\": \"x\",\n \"messages\": [\n{\"role\": \"assistant\", \"content\": \"hi\"}]}]", 4, []string{`conversation 0 (id "x")`, "messages[0].role"}},
		{"system only", `[{"id": "x", "messages": [{"role": "system", "content": "s"}]}]`, 1, []string{"messages[0].role", "needs a user message"}},
		{"tool role", "[{\"id\": \"x\", \"messages\": [\n{\"role\": \"user\", \"content\": \"a\"},\n{\"role\": \"tool\", \"content\": \"b\"}]}]", 3, []string{"messages[1].role", `"tool"`}},
		{"id too long", "[\n{\"id\": \"" + strings.Repeat("x", MaxIDBytes+1) + "\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]", 2, []string{"conversation 0: id: 257 bytes is over the maximum 256", "x-request-id"}},
		{"id not a string", "[\n{\"id\": 3, \"messages\": []}]", 2, []string{"conversation 0", "id: want a string, got a number"}},
		{"duplicate id", "[\n{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]},\n{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"y\"}]}]", 3, []string{`conversation 1 (id "a")`, "more than once"}},
		{"no messages", "[\n\n{\"id\": \"a\", \"messages\": []}]", 3, []string{"messages: want a non-empty list"}},
		{"content not a string", "[{\"id\": \"a\", \"messages\": [\n{\"role\": \"user\", \"content\": [\"x\"]}]}]", 2, []string{"messages[0].content: want a string, got a list"}},
		{"user message with extra key", "[{\"id\": \"a\", \"messages\": [\n{\"role\": \"user\", \"content\": \"x\", \"name\": \"bob\"}]}]", 2, []string{"messages[0].name"}},
		{"empty list", "[]", 0, []string{"no conversations"}},
		{"empty file", "", 0, []string{"empty file"}},
		{"data after the list", "[{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]\n\n]", 3, []string{"unexpected data after the list"}},
		{"message not an object", "[{\"id\": \"a\", \"messages\": [\n{\"role\": \"user\", \"content\": \"x\"},\n\"hello\"]}]", 3, []string{"messages[1]: want an object", "got a string"}},
		{"entry not an object", "[\n{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]},\n42]", 3, []string{"conversation 1: want an object"}},
		// encoding/json would read the byte as U+FFFD; vLLM's converter refuses it.
		{"content not UTF-8", "[{\"id\": \"a\", \"messages\": [\n{\"role\": \"user\", \"content\": \"x\"},\n{\"role\": \"assistant\", \"content\": \"ok\"},\n{\"role\": \"user\", \"content\": \"caf\xe9\"}]}]", 4, []string{"conversation 0: messages[2].content: byte 0xe9 is not UTF-8"}},
		{"id not UTF-8", "[\n{\"id\": \"a\xff\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]", 2, []string{"conversation 0: id: byte 0xff is not UTF-8"}},
		{"key not UTF-8", "[{\"id\": \"a\", \"messages\": [\n{\"role\": \"user\", \"content\": \"x\", \"n\xc3\": 1}]}]", 2, []string{"a key in messages[0]", "0xc3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "convs.json", tt.content)
			convs, err := Load(context.Background(), Source{Kind: KindFile, Path: path}, "", loadLlama3(t), 0)
			var fe *dataset.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v (%d conversations), want a file error", err, len(convs))
			}
			if convs != nil {
				t.Errorf("got %d conversations with the error", len(convs))
			}
			if fe.Path != path || fe.Line != tt.line {
				t.Errorf("error at %s:%d, want %s:%d: %v", fe.Path, fe.Line, path, tt.line, err)
			}
			for _, s := range tt.in {
				if !strings.Contains(fe.Msg, s) {
					t.Errorf("error %q does not say %q", fe.Msg, s)
				}
			}
		})
	}
}
