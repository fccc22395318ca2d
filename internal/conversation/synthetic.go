package conversation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

// GenerateFiletype is the filetype of vLLM's generator configuration.
const GenerateFiletype = "generate_conversations"

// basePrompt is the instruction every synthetic user message carries
// before its filler text (vLLM's base_prompt_text).
const basePrompt = "Please rewrite the following text and add more content: "

// Synthetic configures generated conversations with the keys of vLLM's
// benchmarks/multi_turn generator, spelled as in generate_multi_turn.json,
// so that such a file's content is a valid Synthetic as it is.
type Synthetic struct {
	// Filetype, when set, must be "generate_conversations" (vLLM requires
	// it in its JSON file; here it is optional).
	Filetype string `json:"filetype" yaml:"filetype"`
	// NumConversations is the number of conversations, 1 to
	// MaxConversations.
	NumConversations int `json:"num_conversations" yaml:"num_conversations"`
	// TextFiles are the text files user messages are cut from, resolved
	// against the scenario file's directory (or the JSON file's). None
	// means the bundled default text.
	TextFiles []string `json:"text_files" yaml:"text_files"`
	// PrintStats is accepted for compatibility with vLLM's file and
	// ignored.
	PrintStats bool `json:"print_stats" yaml:"print_stats"`
	// PromptInput draws the user side of each conversation.
	PromptInput PromptInput `json:"prompt_input" yaml:"prompt_input"`
	// PromptOutput draws the answers' lengths.
	PromptOutput PromptOutput `json:"prompt_output" yaml:"prompt_output"`
}

// PromptInput holds the distributions of a synthetic conversation's user
// side.
type PromptInput struct {
	// NumTurns is the number of messages of a conversation, user and
	// assistant together, as vLLM counts them: a draw below 2 becomes 2
	// and an odd draw is rounded up, so a conversation has NumTurns/2 user
	// turns. Required.
	NumTurns *Distribution `json:"num_turns" yaml:"num_turns"`
	// CommonPrefixNumTokens is the length in tokens of a prefix drawn once
	// and shared by the first user message of every conversation; it
	// counts against that message's NumTokens, as in vLLM. Absent means 0.
	CommonPrefixNumTokens *Distribution `json:"common_prefix_num_tokens" yaml:"common_prefix_num_tokens"`
	// PrefixNumTokens is the length in tokens of each conversation's own
	// prefix (its context), added to its first user message on top of
	// NumTokens. vLLM requires it; absent means 0 here.
	PrefixNumTokens *Distribution `json:"prefix_num_tokens" yaml:"prefix_num_tokens"`
	// NumTokens is the length in tokens of each user message (without the
	// conversation's prefix). Required.
	NumTokens *Distribution `json:"num_tokens" yaml:"num_tokens"`
}

// PromptOutput holds the distribution of the answers' lengths.
type PromptOutput struct {
	// NumTokens is each answer's max_tokens (at least 1). Required.
	NumTokens *Distribution `json:"num_tokens" yaml:"num_tokens"`
}

// validate checks s; paths are prefixed with at.
func (s Synthetic) validate(at string) error {
	if s.Filetype != "" && s.Filetype != GenerateFiletype {
		return fieldErr(at+"filetype", "%q: want %q", s.Filetype, GenerateFiletype)
	}
	if s.NumConversations < 1 {
		return fieldErr(at+"num_conversations", "%d: want at least 1", s.NumConversations)
	}
	if s.NumConversations > MaxConversations {
		return fieldErr(at+"num_conversations", "%d is over the maximum %d", s.NumConversations, MaxConversations)
	}
	if len(s.TextFiles) > MaxTextFiles {
		return fieldErr(at+"text_files", "%d files is over the maximum %d", len(s.TextFiles), MaxTextFiles)
	}
	for i, f := range s.TextFiles {
		if f == "" {
			return fieldErr(fmt.Sprintf("%stext_files[%d]", at, i), "empty file name")
		}
	}
	dists := []struct {
		path     string
		d        *Distribution
		required bool
	}{
		{"prompt_input.num_turns", s.PromptInput.NumTurns, true},
		{"prompt_input.common_prefix_num_tokens", s.PromptInput.CommonPrefixNumTokens, false},
		{"prompt_input.prefix_num_tokens", s.PromptInput.PrefixNumTokens, false},
		{"prompt_input.num_tokens", s.PromptInput.NumTokens, true},
		{"prompt_output.num_tokens", s.PromptOutput.NumTokens, true},
	}
	for _, d := range dists {
		if d.d == nil {
			if d.required {
				return fieldErr(at+d.path, "missing")
			}
			continue
		}
		if err := d.d.Validate(at+d.path, true); err != nil {
			return err
		}
	}
	return nil
}

// draw returns one draw of d (0 when d is absent), clamped to ceiling.
func draw(d *Distribution, r *rand.Rand, ceiling int) int {
	if d == nil {
		return 0
	}
	return d.Int(r, ceiling)
}

// generate builds s's conversations as vLLM's generate_conversations lays
// them out. The first user message of conversation c is the common prefix,
// "c is a nice number... ", "c, " and the conversation's prefix, the base
// instruction, then filler text; later user messages are the same without
// the prefixes. Prefix and filler text are cut from the text at vLLM's
// offsets (wrapping around its end). The filler is lengthened or shortened
// until the whole message counts exactly the drawn tokens (plus the
// prefix's on the first turn); a message whose fixed parts alone exceed
// its draw has no filler and counts what it counts. UserTokens is always
// the tokenizer's count of the message. Draws come from a PCG seeded with
// seed: deterministic per seed, but not numpy's numbers.
func (s Synthetic) generate(ctx context.Context, baseDir string, tok *tokenizer.Tokenizer, seed int64) ([]Conversation, error) {
	text, err := readCorpus(s.TextFiles, baseDir, tok)
	if err != nil {
		return nil, err
	}
	r := NewRand(uint64(seed), 0)
	in, out := s.PromptInput, s.PromptOutput
	n := s.NumConversations
	baseTokens := len(dataset.EncodeText(tok, basePrompt))
	msgs := make([]int, n)
	for i := range msgs {
		m := max(in.NumTurns.Int(r, MaxMessages), 2)
		msgs[i] = min(m+m%2, MaxMessages)
	}
	prefixes := make([]int, n)
	for i := range prefixes {
		prefixes[i] = draw(in.PrefixNumTokens, r, MaxTokens)
	}
	base, common := 0, draw(in.CommonPrefixNumTokens, r, MaxTokens)
	var commonText string
	if common > 0 {
		commonText = dataset.DecodeText(tok, text.slice(0, max(common-2, 0))) + "."
		base += common
	}
	convs := make([]Conversation, n)
	total := 0
	for c := range convs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		nmsg := msgs[c]
		inTok, outTok := make([]int, nmsg), make([]int, nmsg)
		for t := range inTok {
			inTok[t] = max(in.NumTokens.Int(r, MaxTokens), baseTokens)
		}
		for t := range outTok {
			outTok[t] = max(out.NumTokens.Int(r, MaxTokens), 1)
		}
		maxIn := slices.Max(inTok)
		conv := Conversation{ID: "CONV_ID_" + strconv.Itoa(c), Turns: make([]Turn, 0, nmsg/2)}
		for t := 0; t < nmsg; t += 2 {
			head := strconv.Itoa(c) + " is a nice number... "
			if t == 0 {
				head = commonText + head
			}
			plain := len(dataset.EncodeText(tok, head+basePrompt))
			target := max(inTok[t], plain)
			if t == 0 && prefixes[c] > 0 {
				head += strconv.Itoa(c) + ", " + dataset.DecodeText(tok, text.slice(base, prefixes[c]))
				base += prefixes[c]
			}
			head += basePrompt
			ids := dataset.EncodeText(tok, head)
			target += len(ids) - plain // the prefix's tokens, on top of the draw
			turn := Turn{User: head, UserTokens: len(ids), MaxTokens: outTok[t+1]}
			if target > len(ids) {
				next := base + t*maxIn
				more := func(k int) []int {
					ids := text.slice(next, k)
					next += k
					return ids
				}
				var final []int
				turn.User, final = dataset.DecodeToLength(tok, append(ids, more(target-len(ids))...), target, more)
				turn.UserTokens = len(final)
			}
			if total += turn.UserTokens; total > totalLimit {
				return nil, fmt.Errorf("synthetic conversations: over %d user tokens in all after %d conversations; lower num_conversations, num_turns or num_tokens", totalLimit, c)
			}
			conv.Turns = append(conv.Turns, turn)
		}
		convs[c] = conv
		base += nmsg
	}
	return convs, nil
}
