package conversation

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/servegate/servegate/internal/dataset"
)

// TestReadGenerateConfig loads a copy of vLLM's generate_multi_turn.json
// unchanged.
func TestReadGenerateConfig(t *testing.T) {
	s, err := ReadGenerateConfig(filepath.Join("testdata", "generate_multi_turn.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := Synthetic{
		Filetype:         GenerateFiletype,
		NumConversations: 24,
		TextFiles:        []string{filepath.Join("testdata", "pg1184.txt")},
		PromptInput: PromptInput{
			NumTurns:              uniform(12, 18),
			CommonPrefixNumTokens: constant(500),
			PrefixNumTokens:       &Distribution{Distribution: Lognormal, Mean: 6, Sigma: 4, Max: 1500},
			NumTokens:             uniform(120, 160),
		},
		PromptOutput: PromptOutput{NumTokens: uniform(80, 120)},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v\nwant %+v", s, want)
	}
}

// TestSyntheticVLLMConfig generates vLLM's shipped configuration and checks
// its shape: turns, shared common prefix, exact counts, answer lengths.
func TestSyntheticVLLMConfig(t *testing.T) {
	convs := mustLoad(t, Source{Kind: KindSynthetic, Path: "generate_multi_turn.json"}, "testdata", 1)
	if len(convs) != 24 {
		t.Fatalf("%d conversations, want 24", len(convs))
	}
	checkCounts(t, convs)
	tok := loadLlama3(t)
	common := convs[0].Turns[0].User[:strings.Index(convs[0].Turns[0].User, "0 is a nice number")]
	if n := tok.Count(common); n < 480 || n > 510 {
		t.Errorf("common prefix has %d tokens, want about 500", n)
	}
	for i, c := range convs {
		if c.ID != "CONV_ID_"+strconv.Itoa(i) {
			t.Errorf("conversation %d: id %q", i, c.ID)
		}
		if n := len(c.Turns); n < 6 || n > 9 {
			t.Errorf("%s: %d user turns, want 6 to 9 (num_turns 12 to 18 counts both sides)", c.ID, n)
		}
		head := common + strconv.Itoa(i) + " is a nice number... "
		if !strings.HasPrefix(c.Turns[0].User, head+strconv.Itoa(i)+", ") && !strings.HasPrefix(c.Turns[0].User, head+basePrompt) {
			t.Errorf("%s: first turn does not start with the common prefix and its own prefix: %.80q", c.ID, c.Turns[0].User)
		}
		for k, turn := range c.Turns {
			if turn.MaxTokens < 80 || turn.MaxTokens > 120 {
				t.Errorf("%s turn %d: max tokens %d outside [80, 120]", c.ID, k, turn.MaxTokens)
			}
			if k > 0 && (turn.UserTokens < 120 || turn.UserTokens > 160) {
				t.Errorf("%s turn %d: %d tokens outside [120, 160]", c.ID, k, turn.UserTokens)
			}
			if k > 0 && !strings.HasPrefix(turn.User, strconv.Itoa(i)+" is a nice number... "+basePrompt) {
				t.Errorf("%s turn %d: %.60q", c.ID, k, turn.User)
			}
		}
	}
}

// TestFileKindReadsGeneratorConfig: like vLLM's --input-file, a file
// source holding a JSON object is a generator configuration.
func TestFileKindReadsGeneratorConfig(t *testing.T) {
	a := mustLoad(t, Source{Kind: KindFile, Path: "generate_multi_turn.json"}, "testdata", 5)
	b := mustLoad(t, Source{Kind: KindSynthetic, Path: "generate_multi_turn.json"}, "testdata", 5)
	if len(a) != 24 || !reflect.DeepEqual(a, b) {
		t.Errorf("file kind gave %d conversations, not the synthetic source's", len(a))
	}
}

// TestSyntheticExactTokens checks that user messages count exactly the
// drawn tokens, the first turn's prefix on top, for text files and the
// bundled text.
func TestSyntheticExactTokens(t *testing.T) {
	tests := []struct {
		name      string
		files     []string
		in, pre   float64
		wantFirst func(n int) bool
	}{
		{"bundled text", nil, 200, 0, func(n int) bool { return n == 200 }},
		{"text file", []string{"pg1184.txt"}, 333, 0, func(n int) bool { return n == 333 }},
		{"prefix on top", []string{"pg1184.txt"}, 150, 700, func(n int) bool { return n >= 850 && n <= 855 }},
		{"long turns wrap the text", nil, 3000, 0, func(n int) bool { return n == 3000 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := Source{Kind: KindSynthetic, Synthetic: Synthetic{
				NumConversations: 3,
				TextFiles:        tt.files,
				PromptInput:      PromptInput{NumTurns: constant(8), NumTokens: constant(tt.in), PrefixNumTokens: constant(tt.pre)},
				PromptOutput:     PromptOutput{NumTokens: constant(42)},
			}}
			convs := mustLoad(t, src, "testdata", 7)
			checkCounts(t, convs)
			for _, c := range convs {
				if len(c.Turns) != 4 {
					t.Fatalf("%s: %d turns, want 4", c.ID, len(c.Turns))
				}
				if !tt.wantFirst(c.Turns[0].UserTokens) {
					t.Errorf("%s: first turn has %d tokens", c.ID, c.Turns[0].UserTokens)
				}
				for k, turn := range c.Turns[1:] {
					if turn.UserTokens != int(tt.in) || turn.MaxTokens != 42 {
						t.Errorf("%s turn %d: %d tokens, max tokens %d; want %v, 42", c.ID, k+1, turn.UserTokens, turn.MaxTokens, tt.in)
					}
				}
			}
		})
	}
}

// TestSyntheticDeterministic checks that a seed gives the same
// conversations and another seed other ones.
func TestSyntheticDeterministic(t *testing.T) {
	src := Source{Kind: KindSynthetic, Synthetic: Synthetic{
		NumConversations: 5,
		PromptInput: PromptInput{
			NumTurns:        uniform(2, 10),
			NumTokens:       dist(Lognormal, func(d *Distribution) { d.Mean, d.Sigma, d.Max = 4, 1, 400 }),
			PrefixNumTokens: dist(Poisson, func(d *Distribution) { d.Alpha = 30 }),
		},
		PromptOutput: PromptOutput{NumTokens: dist(Zipf, func(d *Distribution) { d.Alpha, d.Max = 1.5, 300 })},
	}}
	a, b, c := mustLoad(t, src, "", 3), mustLoad(t, src, "", 3), mustLoad(t, src, "", 4)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave different conversations")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 3 and 4 gave the same conversations")
	}
	checkCounts(t, a)
}

// TestSyntheticBadInput checks the errors of a bad synthetic source and a
// bad generator file: field paths, file and line.
func TestSyntheticBadInput(t *testing.T) {
	good := func() Source {
		return Source{Kind: KindSynthetic, Synthetic: Synthetic{
			NumConversations: 2,
			PromptInput:      PromptInput{NumTurns: constant(4), NumTokens: constant(50)},
			PromptOutput:     PromptOutput{NumTokens: constant(10)},
		}}
	}
	tests := []struct {
		name  string
		edit  func(*Source)
		field string
	}{
		{"no kind", func(s *Source) { s.Kind = "" }, "kind"},
		{"unknown kind", func(s *Source) { s.Kind = "csv" }, "kind"},
		{"no conversations", func(s *Source) { s.NumConversations = 0 }, "num_conversations"},
		{"too many conversations", func(s *Source) { s.NumConversations = MaxConversations + 1 }, "num_conversations"},
		{"missing num_turns", func(s *Source) { s.PromptInput.NumTurns = nil }, "prompt_input.num_turns"},
		{"missing output", func(s *Source) { s.PromptOutput.NumTokens = nil }, "prompt_output.num_tokens"},
		{"unknown distribution", func(s *Source) { s.PromptInput.NumTokens = dist("normal", nil) }, "prompt_input.num_tokens.distribution"},
		{"uniform min over max", func(s *Source) { s.PromptInput.NumTokens = uniform(9, 3) }, "prompt_input.num_tokens"},
		{"fractional uniform", func(s *Source) { s.PromptInput.NumTokens = uniform(1.5, 3) }, "prompt_input.num_tokens"},
		{"zipf alpha 1", func(s *Source) { s.PromptInput.NumTokens = dist(Zipf, func(d *Distribution) { d.Alpha = 1 }) }, "prompt_input.num_tokens.alpha"},
		{"stray parameter", func(s *Source) {
			s.PromptInput.NumTokens = dist(Constant, func(d *Distribution) { d.Value, d.Sigma = 3, 1 })
		}, "prompt_input.num_tokens.sigma"},
		{"negative max", func(s *Source) {
			s.PromptInput.NumTokens = dist(Poisson, func(d *Distribution) { d.Alpha, d.Max = 3, -1 })
		}, "prompt_input.num_tokens.max"},
		{"key of another kind", func(s *Source) { s.BlockSize = 16 }, "block_size"},
		{"path and keys", func(s *Source) { s.Path = "x.json" }, "filetype"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good()
			tt.edit(&s)
			if tt.name == "path and keys" {
				s.Filetype = GenerateFiletype
			}
			err := s.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate() = %v, want a FieldError on %s", err, tt.field)
			}
			if _, err := Load(context.Background(), s, "", loadLlama3(t), 0); err == nil {
				t.Error("Load accepted the source")
			}
		})
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("good source: %v", err)
	}

	files := []struct {
		name, content string
		line          int
		in            string
	}{
		{"syntax", "{\n\"filetype\": \"generate_conversations\",\n\"num_conversations\": 2,,\n}", 3, "malformed JSON"},
		{"unknown key", "{\n\"filetype\": \"generate_conversations\",\n\"num_conversation\": 2\n}", 3, `unknown key "num_conversation"`},
		{"wrong type", "{\n\"filetype\": \"generate_conversations\",\n\"num_conversations\": \"two\"\n}", 3, "num_conversations"},
		{"bad filetype", "{\n\"filetype\": \"conversations\"\n}", 2, "filetype"},
		{"bad distribution", `{"filetype": "generate_conversations", "num_conversations": 2, "text_files": ["a.txt"],
"prompt_input": {"num_turns": {"distribution": "uniform", "min": 2, "max": 4},
  "num_tokens": {"distribution": "zipf"}},
"prompt_output": {"num_tokens": {"distribution": "constant", "value": 5}}}`, 3, "prompt_input.num_tokens.alpha"},
		{"missing distribution", `{"filetype": "generate_conversations", "num_conversations": 2, "text_files": ["a.txt"],
"prompt_input": {"num_turns": {"distribution": "uniform", "min": 2, "max": 4},
  "num_tokens": {"distribution": "constant", "value": 5}},
"prompt_output": {"num_tokens": {"value": 5}}}`, 4, "prompt_output.num_tokens.distribution: missing"},
	}
	for _, f := range files {
		t.Run("file "+f.name, func(t *testing.T) {
			path := writeFile(t, "gen.json", f.content)
			_, err := ReadGenerateConfig(path)
			var fe *dataset.FileError
			if !errors.As(err, &fe) || fe.Path != path || (f.line > 0 && fe.Line != f.line) || !strings.Contains(fe.Msg, f.in) {
				t.Fatalf("got %v, want %s:%d: ...%s...", err, path, f.line, f.in)
			}
		})
	}
}
