package dataset

import (
	"fmt"
	"io"
	"os"
)

// Limits on the numbers of a Spec. They sit far above any real benchmark
// and keep a typing slip (input_len: 2000000000) from exhausting memory:
// Load rejects a Spec past them before building anything, and the scenario
// file and the bench flags report them against their own key or flag.
const (
	// MaxNumPrompts is the most samples a Spec may ask for.
	MaxNumPrompts = 1_000_000
	// MaxLen is the longest input, output, prefix or suffix length in
	// tokens, for every dataset.
	MaxLen = 1 << 20
	// MaxNumPrefixes is the most distinct prefixes of prefix_repetition.
	MaxNumPrefixes = 100_000
	// MaxBatchSize is the most prompts in one embeddings or rerank request.
	MaxBatchSize = 10_000
	// MaxTotalTokens is the most prompt tokens a generated dataset
	// (random, random-rerank, prefix_repetition, txt-slices) may hold:
	// num_prompts times the longest prompt (about 640 MB of text).
	MaxTotalTokens = 1 << 27
	// MaxFileBytes is the largest ShareGPT or txt-slices file, which are
	// read whole: 1 GiB, as for a conversations file.
	MaxFileBytes = 1 << 30
)

// fileLimit is MaxFileBytes; a test lowers it.
var fileLimit int64 = MaxFileBytes

// readFileLimited reads a file that is read whole. It refuses one over
// fileLimit before reading it, and stops reading one that grows past it
// (a pipe, or /dev/zero).
func readFileLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	over := func() error {
		return fileErr(path, 0, "the file is over the maximum of %d bytes (MaxFileBytes)", fileLimit)
	}
	if fi.Size() > fileLimit {
		return nil, over()
	}
	data, err := io.ReadAll(io.LimitReader(f, fileLimit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > fileLimit {
		return nil, over()
	}
	return data, nil
}

// checkLimits checks the spec's numbers against the limits above.
func (s Spec) checkLimits() error {
	over := func(name string, v, limit int) error {
		if v > limit {
			return fmt.Errorf("%s %d is over the maximum %d", name, v, limit)
		}
		return nil
	}
	errs := []error{
		over("num prompts", s.NumPrompts, MaxNumPrompts),
		over("random batch size", s.Random.BatchSize, MaxBatchSize),
		over("prefix_repetition num prefixes", s.PrefixRepetition.NumPrefixes, MaxNumPrefixes),
	}
	lens := []struct {
		name string
		v    int
	}{
		{"random input length", s.Random.InputLen}, {"random output length", s.Random.OutputLen}, {"random prefix length", s.Random.PrefixLen},
		{"sharegpt output length", s.ShareGPT.OutputLen}, {"custom output length", s.Custom.OutputLen}, {"spec_bench output length", s.SpecBench.OutputLen},
		{"sonnet input length", s.Sonnet.InputLen}, {"sonnet output length", s.Sonnet.OutputLen}, {"sonnet prefix length", s.Sonnet.PrefixLen},
		{"prefix_repetition prefix length", s.PrefixRepetition.PrefixLen}, {"prefix_repetition suffix length", s.PrefixRepetition.SuffixLen},
		{"prefix_repetition output length", s.PrefixRepetition.OutputLen},
		{"txt-slices input length", s.TxtSlices.InputLen}, {"txt-slices output length", s.TxtSlices.OutputLen},
	}
	for _, l := range lens {
		errs = append(errs, over(l.name, l.v, MaxLen))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if total, ok := s.promptTokens(); ok && total > MaxTotalTokens {
		return fmt.Errorf("num prompts %d times %d prompt tokens is %d tokens, over the maximum %d; lower num prompts or the input length", s.NumPrompts, total/max(s.NumPrompts, 1), total, MaxTotalTokens)
	}
	return nil
}

// promptTokens is the most prompt tokens a generated dataset builds, false
// for datasets read from files (bounded by the file).
func (s Spec) promptTokens() (int, bool) {
	var per int
	switch s.Name {
	case Random, RandomRerank:
		per = int(float64(s.Random.InputLen)*(1+s.Random.RangeRatio)) + 1 + s.Random.PrefixLen
	case PrefixRepetition:
		per = s.PrefixRepetition.PrefixLen + s.PrefixRepetition.SuffixLen
	case TxtSlices:
		per = s.TxtSlices.InputLen
	default:
		return 0, false
	}
	return max(s.NumPrompts, 0) * per, true
}
