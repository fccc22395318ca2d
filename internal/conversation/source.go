package conversation

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/servegate/servegate/internal/limit"
	"github.com/servegate/servegate/internal/tokenizer"
)

// The source kinds.
const (
	// KindSynthetic generates conversations with vLLM's generator knobs.
	KindSynthetic = "synthetic"
	// KindFile reads a conversations file in vLLM's multi-turn input
	// format, or, as vLLM's --input-file does, a generator configuration
	// when the file holds a JSON object.
	KindFile = "file"
	// KindShareGPT reads a ShareGPT file through vLLM's
	// convert_sharegpt_to_openai.py conversion.
	KindShareGPT = "sharegpt"
	// KindMooncake reads a Mooncake-style trace (JSONL).
	KindMooncake = "mooncake"
)

// Kinds lists the source kinds, the closed word list that validation and
// docs read.
func Kinds() []string { return []string{KindSynthetic, KindFile, KindShareGPT, KindMooncake} }

// DefaultBlockSize is a Mooncake trace's block size in tokens when
// block_size is not given: the FAST'25 traces' 512.
const DefaultBlockSize = 512

// A Source says where conversations come from. Kind picks the source; the
// other keys belong to one kind each, and a key of another kind is an
// error. The zero value is invalid (Kind is required).
type Source struct {
	// Kind is synthetic, file, sharegpt or mooncake.
	Kind string `yaml:"kind"`
	// Path is the file to read, resolved against the scenario file's
	// directory: the conversations file (file), the ShareGPT file
	// (sharegpt), the trace (mooncake), or for synthetic a vLLM generator
	// configuration (generate_multi_turn.json) used instead of the inline
	// keys below.
	Path string `yaml:"path"`

	// Synthetic holds the generator's keys inline, as vLLM's
	// generate_multi_turn.json spells them (synthetic).
	Synthetic `yaml:",inline"`

	// MaxItems keeps at most this many converted conversations, sampled
	// as vLLM's --max-items does (sharegpt; 0: all).
	MaxItems int `yaml:"max_items"`
	// MinTurns drops conversations with fewer messages, counted before
	// conversion (sharegpt; 0: no minimum).
	MinTurns int `yaml:"min_turns"`
	// MaxTurns keeps at most this many messages of each conversation,
	// counted before conversion (sharegpt; 0: all).
	MaxTurns int `yaml:"max_turns"`
	// MinContentLen and MaxContentLen drop conversations with a message
	// shorter or longer than this many characters (sharegpt; 0: no
	// bound).
	MinContentLen int `yaml:"min_content_len"`
	MaxContentLen int `yaml:"max_content_len"`
	// KeepASCII keeps conversations whose messages are plain ASCII.
	// vLLM's conversion keeps only conversations in which every message
	// has a non-ASCII character (its content_is_valid returns
	// has_non_english_chars); that is the default here too (sharegpt).
	KeepASCII bool `yaml:"keep_ascii"`

	// BlockSize is the number of tokens one hash id stands for (mooncake;
	// 0: DefaultBlockSize).
	BlockSize int `yaml:"block_size"`
	// MaxRequests reads only the trace's first MaxRequests requests
	// (mooncake; 0: all). The FAST'25 conversation trace holds about 145
	// million input tokens, over MaxTotalTokens: replay a window of it.
	MaxRequests int `yaml:"max_requests"`
}

// keysOf names the keys each kind takes besides kind and path.
var keysOf = map[string][]string{
	KindSynthetic: {"filetype", "num_conversations", "text_files", "print_stats", "prompt_input", "prompt_output"},
	KindFile:      nil,
	KindShareGPT:  {"max_items", "min_turns", "max_turns", "min_content_len", "max_content_len", "keep_ascii"},
	KindMooncake:  {"block_size", "max_requests"},
}

// setKeys lists the keys of s that are set, besides kind and path.
func (s Source) setKeys() []string {
	var keys []string
	add := func(key string, set bool) {
		if set {
			keys = append(keys, key)
		}
	}
	y := s.Synthetic
	add("filetype", y.Filetype != "")
	add("num_conversations", y.NumConversations != 0)
	add("text_files", y.TextFiles != nil)
	add("print_stats", y.PrintStats)
	add("prompt_input", y.PromptInput != PromptInput{})
	add("prompt_output", y.PromptOutput != PromptOutput{})
	add("max_items", s.MaxItems != 0)
	add("min_turns", s.MinTurns != 0)
	add("max_turns", s.MaxTurns != 0)
	add("min_content_len", s.MinContentLen != 0)
	add("max_content_len", s.MaxContentLen != 0)
	add("keep_ascii", s.KeepASCII)
	add("block_size", s.BlockSize != 0)
	add("max_requests", s.MaxRequests != 0)
	return keys
}

// Limits checks the source's whole-number keys against their maxima
// (names relative to the source, as in FieldError), for the scenario file's
// limits table; Validate checks them too. Distribution parameters are
// bounded by MaxParam, MaxZipfAlpha and MaxSigma.
func (s Source) Limits() []limit.Check {
	return []limit.Check{
		limit.Int("num_conversations", s.NumConversations, MaxConversations),
		limit.Int("text_files", len(s.TextFiles), MaxTextFiles),
		limit.Int("max_items", s.MaxItems, MaxConversations),
		limit.Int("min_turns", s.MinTurns, MaxMessages),
		limit.Int("max_turns", s.MaxTurns, MaxMessages),
		limit.Int("min_content_len", s.MinContentLen, MaxContentLen),
		limit.Int("max_content_len", s.MaxContentLen, MaxContentLen),
		limit.Int("block_size", s.BlockSize, MaxBlockSize),
		limit.Int("max_requests", s.MaxRequests, MaxConversations),
	}
}

// Validate checks the source's keys without reading any file. Its errors
// are *FieldError values whose Field is the key's path below the source.
func (s Source) Validate() error {
	allowed, ok := keysOf[s.Kind]
	if !ok {
		if s.Kind == "" {
			return fieldErr("kind", "missing; want one of %s", strings.Join(Kinds(), ", "))
		}
		return fieldErr("kind", "unknown kind %q; want one of %s", s.Kind, strings.Join(Kinds(), ", "))
	}
	for _, key := range s.setKeys() {
		if !slices.Contains(allowed, key) {
			return fieldErr(key, "not a key of a %s source (it takes %s)", s.Kind, strings.Join(append([]string{"path"}, allowed...), ", "))
		}
	}
	if c, over := limit.FirstOver(s.Limits()); over {
		return fieldErr(c.Name, "%s is over the maximum %s", c.Value, c.Max)
	}
	switch s.Kind {
	case KindSynthetic:
		if s.Path != "" {
			if len(s.setKeys()) > 0 {
				return fieldErr(s.setKeys()[0], "give either path (a vLLM generator config) or the generator's keys, not both")
			}
			return nil
		}
		return s.Synthetic.validate("")
	case KindFile, KindShareGPT, KindMooncake:
		if s.Path == "" {
			return fieldErr("path", "missing: a %s source reads a file", s.Kind)
		}
	}
	for _, k := range []struct {
		key string
		v   int
	}{{"max_items", s.MaxItems}, {"min_turns", s.MinTurns}, {"max_turns", s.MaxTurns}, {"min_content_len", s.MinContentLen}, {"max_content_len", s.MaxContentLen}, {"block_size", s.BlockSize}, {"max_requests", s.MaxRequests}} {
		if k.v < 0 {
			return fieldErr(k.key, "%d must not be negative", k.v)
		}
	}
	if s.MinTurns > 0 && s.MaxTurns > 0 && s.MinTurns > s.MaxTurns {
		return fieldErr("min_turns", "%d is over max_turns %d", s.MinTurns, s.MaxTurns)
	}
	if s.MinContentLen > 0 && s.MaxContentLen > 0 && s.MinContentLen > s.MaxContentLen {
		return fieldErr("min_content_len", "%d is over max_content_len %d", s.MinContentLen, s.MaxContentLen)
	}
	return nil
}

// Load validates src and builds its conversations. Relative paths (path,
// text_files) are resolved against baseDir, the scenario file's directory.
// tok counts and cuts tokens; seed makes the synthetic draws, the ShareGPT
// shuffle and sample, and a trace's block text deterministic. A bad file
// is a *dataset.FileError naming the file, line and field; nothing is
// returned then.
func Load(ctx context.Context, src Source, baseDir string, tok *tokenizer.Tokenizer, seed int64) ([]Conversation, error) {
	if err := src.Validate(); err != nil {
		return nil, fmt.Errorf("conversation source: %w", err)
	}
	if tok == nil {
		return nil, fmt.Errorf("conversation source: no tokenizer")
	}
	path := resolve(baseDir, src.Path)
	switch src.Kind {
	case KindSynthetic:
		s := src.Synthetic
		dir := baseDir
		if src.Path != "" {
			var err error
			if s, err = ReadGenerateConfig(path); err != nil {
				return nil, err
			}
			dir = ""
		}
		return s.generate(ctx, dir, tok, seed)
	case KindFile:
		if holdsObject(path) { // vLLM's --input-file: a generator configuration
			s, err := ReadGenerateConfig(path)
			if err != nil {
				return nil, err
			}
			return s.generate(ctx, "", tok, seed)
		}
		return readConversations(ctx, path, tok)
	case KindShareGPT:
		return readShareGPT(ctx, path, src, tok, seed)
	case KindMooncake:
		return readTrace(ctx, path, cmp.Or(src.BlockSize, DefaultBlockSize), src.MaxRequests, tok, seed)
	}
	return nil, fmt.Errorf("conversation source: unknown kind %q", src.Kind)
}
