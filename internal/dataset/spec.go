package dataset

import (
	"context"
	"fmt"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/tokenizer"
)

// Dataset names accepted in Spec.Name, as vllm bench serve spells them.
const (
	Random           = "random"
	RandomRerank     = "random-rerank"
	ShareGPT         = "sharegpt"
	Custom           = "custom"
	SpecBench        = "spec_bench"
	Sonnet           = "sonnet"
	BurstGPT         = "burstgpt"
	PrefixRepetition = "prefix_repetition"
	TxtSlices        = "txt-slices"
)

// Names lists every dataset Load accepts.
var Names = []string{Random, RandomRerank, ShareGPT, Custom, SpecBench, Sonnet, BurstGPT, PrefixRepetition, TxtSlices}

// fileDatasets are the datasets read from Spec.Path.
var fileDatasets = map[string]bool{ShareGPT: true, Custom: true, SpecBench: true, Sonnet: true, BurstGPT: true, TxtSlices: true}

// NeedsPath reports whether the dataset is read from a file (Spec.Path).
func NeedsPath(name string) bool { return fileDatasets[name] }

// ReplaysTraces reports whether the dataset can carry arrival times for
// Spec.TraceReplay (burstgpt, custom).
func ReplaysTraces(name string) bool { return name == BurstGPT || name == Custom }

// A Spec says which samples to build. Its zero value is vLLM's default: 1,000
// random prompts of 1,024 tokens with 128 output tokens, seed 0. Every field
// left zero takes vLLM v0.13's default, written beside it.
//
// Randomness. servegate reproduces the generators vLLM v0.13 draws from,
// seeded the same way: numpy's default_rng (PCG64 behind SeedSequence, with
// Generator.integers' bounded draws) for random and random-rerank, numpy's
// legacy RandomState (MT19937) for prefix_repetition's token ids and
// burstgpt's pandas row sample, and CPython's random (MT19937) for the
// shuffles of sharegpt, custom and spec_bench, oversampling, sonnet's line
// draws, txt-slices' start positions and prefix_repetition's final shuffle.
// With the same tokenizer, chat template and seed, the samples are vllm
// bench serve's byte for byte (testdata/vllm_*.json, written by
// fixtures/datasets/crosscheck.py, holds vLLM's output; the tests compare).
// The exceptions are servegate's own additions: the seed is honoured for
// custom and spec_bench (vLLM always uses 0 there, which is servegate's
// default), negative seeds are taken as their absolute value,
// DisableShuffle applies to burstgpt, and the extensions listed on each
// field. A fixed seed gives the same samples from run to run.
type Spec struct {
	// Name is the dataset: one of Names. Default: random.
	Name string
	// NumPrompts is the number of samples to produce. Default: 1000. A
	// negative value means every row of the file (custom and spec_bench only,
	// as vLLM's num_prompts <= 0).
	NumPrompts int
	// Seed seeds every random choice. Default: 0. vLLM ignores the seed for
	// custom and spec_bench (always 0); servegate honours it everywhere.
	// burstgpt and prefix_repetition use its low 32 bits, as numpy's legacy
	// generator only takes seeds below 2^32.
	Seed int64
	// Path is the dataset file (sharegpt JSON, custom or spec_bench JSONL,
	// burstgpt CSV, sonnet or txt-slices text). Unused by random, random-rerank and
	// prefix_repetition.
	Path string
	// Backend is the client backend (openai, vllm, openai-chat,
	// openai-embeddings, vllm-rerank). Sonnet sends the raw prompt to
	// openai-chat and the chat-formatted prompt to others, as vLLM does.
	Backend string
	// RequestIDPrefix is put before each request id ("<prefix><index>").
	RequestIDPrefix string
	// NoOversample keeps a file dataset's samples as they are when the file
	// yields fewer than NumPrompts (vLLM's --no-oversample). Otherwise
	// samples are drawn again at random, with fresh request ids, up to
	// NumPrompts.
	NoOversample bool
	// DisableShuffle keeps file order (vLLM's --disable-shuffle).
	DisableShuffle bool
	// SkipChatTemplate sends custom and spec_bench prompts as they are,
	// without the model's chat template (vLLM's --skip-chat-template).
	SkipChatTemplate bool
	// TokenizerConfig carries the model's chat template and decoding
	// options. When nil, Load reads tokenizer_config.json from the directory
	// of the tokenizer file, if there is one.
	TokenizerConfig *TokenizerConfig
	// TraceReplay makes burstgpt and custom keep the file's order (custom:
	// sorted by time) and fill Sample.Arrival from the trace (BurstGPT's
	// Timestamp column in seconds, or a "timestamp" field in JSONL: seconds,
	// or an RFC 3339 time) so that the engine can replay it. The first
	// sample arrives at 0. No shuffling or oversampling happens.
	TraceReplay bool
	// Deprecated: TraceSpeed is ignored. Sample.Arrival is trace time and
	// the engine applies its own TraceSpeed when replaying; scaling here as
	// well would apply the factor twice.
	TraceSpeed float64

	Random           RandomParams
	ShareGPT         ShareGPTParams
	Custom           CustomParams
	SpecBench        SpecBenchParams
	Sonnet           SonnetParams
	PrefixRepetition PrefixRepetitionParams
	TxtSlices        TxtSlicesParams
}

// RandomParams configures the random and random-rerank datasets.
type RandomParams struct {
	// InputLen is the mean input length in tokens, special tokens included.
	// Default: 1024.
	InputLen int
	// OutputLen is the mean output length in tokens. Default: 128.
	OutputLen int
	// RangeRatio widens both lengths to the inclusive integer range
	// [floor(len*(1-r)), ceil(len*(1+r))]; it must be in [0, 1). Default: 0.
	RangeRatio float64
	// PrefixLen is the number of random tokens shared by every prompt,
	// added to the sampled input length. Default: 0.
	PrefixLen int
	// BatchSize groups prompts into one request (embeddings and rerank
	// only). Default: 1.
	BatchSize int
	// NoReranker builds random-rerank samples for a model that does not
	// rerank natively: the query is sent as the first embedding input
	// (vLLM's --no-reranker).
	NoReranker bool
}

// ShareGPTParams configures the sharegpt dataset.
type ShareGPTParams struct {
	// OutputLen, when positive, replaces each conversation's completion
	// length and lifts the minimum-output filter. Default: 0 (use the
	// completion's token count).
	OutputLen int
}

// CustomParams configures the custom JSONL dataset.
type CustomParams struct {
	// OutputLen is the output length of rows without an "output_tokens"
	// field. Default: 256.
	OutputLen int
}

// SpecBenchParams configures the spec_bench dataset.
type SpecBenchParams struct {
	// OutputLen is the output length of every sample. Default: 256.
	OutputLen int
	// Category keeps only rows of this category. Default: all.
	Category string
}

// SonnetParams configures the sonnet dataset.
type SonnetParams struct {
	// InputLen is the maximum prompt length in tokens, chat template
	// included. Default: 550.
	InputLen int
	// OutputLen is the output length of every sample. Default: 150.
	OutputLen int
	// PrefixLen is the approximate length in tokens of the shared prefix
	// (the first lines of the poem). Default: 200.
	PrefixLen int
}

// PrefixRepetitionParams configures the prefix_repetition dataset.
type PrefixRepetitionParams struct {
	// PrefixLen is the length of each shared prefix in tokens. Default: 256.
	PrefixLen int
	// SuffixLen is the length of each prompt's own suffix. Default: 256.
	SuffixLen int
	// NumPrefixes is the number of distinct prefixes; each is used by
	// NumPrompts/NumPrefixes prompts. Default: 10.
	NumPrefixes int
	// OutputLen is the output length of every sample. Default: 128.
	OutputLen int
}

// TxtSlicesParams configures the txt-slices dataset.
type TxtSlicesParams struct {
	// InputLen is the prompt length in tokens, special tokens included.
	// Default: 1024.
	InputLen int
	// OutputLen is the output length of every sample. Default: 128.
	OutputLen int
}

// withDefaults returns the spec with every zero field set to vLLM's default.
func (s Spec) withDefaults() Spec {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if s.Name == "" {
		s.Name = Random
	}
	def(&s.NumPrompts, 1000)
	def(&s.Random.InputLen, 1024)
	def(&s.Random.OutputLen, 128)
	def(&s.Random.BatchSize, 1)
	def(&s.Custom.OutputLen, 256)
	def(&s.SpecBench.OutputLen, 256)
	def(&s.Sonnet.InputLen, 550)
	def(&s.Sonnet.OutputLen, 150)
	def(&s.Sonnet.PrefixLen, 200)
	def(&s.PrefixRepetition.PrefixLen, 256)
	def(&s.PrefixRepetition.SuffixLen, 256)
	def(&s.PrefixRepetition.NumPrefixes, 10)
	def(&s.PrefixRepetition.OutputLen, 128)
	def(&s.TxtSlices.InputLen, 1024)
	def(&s.TxtSlices.OutputLen, 128)
	return s
}

// Load builds the samples a spec describes, using tok to count and generate
// tokens. Errors name the file, line and field at fault.
func Load(ctx context.Context, spec Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	s := spec.withDefaults()
	if tok == nil {
		return nil, fmt.Errorf("load %s dataset: no tokenizer", s.Name)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("load %s dataset: %w", s.Name, err)
	}
	if s.TokenizerConfig == nil {
		cfg, err := configBeside(tok.Name())
		if err != nil {
			return nil, fmt.Errorf("load %s dataset: %w", s.Name, err)
		}
		s.TokenizerConfig = cfg
	}
	if fileDatasets[s.Name] && s.Path == "" {
		return nil, fmt.Errorf("load %s dataset: no dataset path", s.Name)
	}
	var (
		samples []Sample
		err     error
	)
	switch s.Name {
	case Random:
		samples, err = loadRandom(ctx, s, tok)
	case RandomRerank:
		samples, err = loadRandomRerank(ctx, s, tok)
	case ShareGPT:
		samples, err = loadShareGPT(ctx, s, tok)
	case Custom:
		samples, err = loadCustom(ctx, s, tok)
	case SpecBench:
		samples, err = loadSpecBench(ctx, s, tok)
	case Sonnet:
		samples, err = loadSonnet(ctx, s, tok)
	case BurstGPT:
		samples, err = loadBurstGPT(ctx, s, tok)
	case PrefixRepetition:
		samples, err = loadPrefixRepetition(ctx, s, tok)
	case TxtSlices:
		samples, err = loadTxtSlices(ctx, s, tok)
	default:
		return nil, fmt.Errorf("load dataset: unknown dataset %q (known: %v)", s.Name, Names)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s dataset: %w", s.Name, err)
	}
	return samples, nil
}

// validate checks the fields every dataset shares.
func (s Spec) validate() error {
	switch {
	case s.NumPrompts < 0 && s.Name != Custom && s.Name != SpecBench:
		return fmt.Errorf("num prompts %d must be positive (only custom and spec_bench take a negative count for every row)", s.NumPrompts)
	case s.TraceReplay && s.Name != Custom && s.Name != BurstGPT:
		return fmt.Errorf("trace replay needs arrival times, which only burstgpt (Timestamp) and custom (\"timestamp\") carry")
	case s.Random.BatchSize < 1:
		return fmt.Errorf("batch size %d must be at least 1", s.Random.BatchSize)
	}
	return s.checkLimits()
}

// ForcesIgnoreEOS reports whether vLLM forces ignore_eos for this dataset and
// backend: random datasets on OpenAI-compatible backends, so that generation
// runs to the requested length.
func ForcesIgnoreEOS(name, backend string) bool {
	if name == "" {
		name = Random
	}
	return (name == Random || name == "random-mm") && client.SendsSampling(backend)
}
