package dataset

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// TestSpecLimits: numbers past the documented limits are errors naming the
// value and the limit, returned before anything is built (input_len
// 2000000000 used to be OOM-killed).
func TestSpecLimits(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{NumPrompts: 1, Random: RandomParams{InputLen: 2_000_000_000}}, "load random dataset: random input length 2000000000 is over the maximum 1048576"},
		{Spec{NumPrompts: 1, Random: RandomParams{OutputLen: MaxLen + 1}}, "load random dataset: random output length 1048577 is over the maximum 1048576"},
		{Spec{NumPrompts: MaxNumPrompts + 1}, "load random dataset: num prompts 1000001 is over the maximum 1000000"},
		{Spec{NumPrompts: 1_000_000, Random: RandomParams{InputLen: 1024}}, "load random dataset: num prompts 1000000 times 1025 prompt tokens is 1025000000 tokens, over the maximum 134217728; lower num prompts or the input length"},
		{Spec{Name: PrefixRepetition, NumPrompts: 1, PrefixRepetition: PrefixRepetitionParams{NumPrefixes: MaxNumPrefixes + 1}}, "load prefix_repetition dataset: prefix_repetition num prefixes 100001 is over the maximum 100000"},
		{Spec{Name: Sonnet, Path: "x", Sonnet: SonnetParams{InputLen: 1 << 40}}, "load sonnet dataset: sonnet input length 1099511627776 is over the maximum 1048576"},
		{Spec{Name: RandomRerank, Random: RandomParams{BatchSize: MaxBatchSize + 1}}, "load random-rerank dataset: random batch size 10001 is over the maximum 10000"},
	}
	for _, tt := range tests {
		_, err := Load(context.Background(), tt.spec, tok)
		assert.EqualError(t, err, tt.want)
	}
}

// TestFileLimit: a ShareGPT or txt-slices file past MaxFileBytes is refused
// before it is read whole, and so is a file that only grows past it while
// it is read (a FIFO stands in for /dev/zero, whose size is 0).
func TestFileLimit(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	defer func(v int64) { fileLimit = v }(fileLimit)
	fileLimit = 64
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, []byte("["+strings.Repeat(" ", 100)+"]"), 0o644))
	small := filepath.Join(dir, "small.json")
	require.NoError(t, os.WriteFile(small, []byte("[]"), 0o644))
	want := " the file is over the maximum of 64 bytes (MaxFileBytes)"
	for _, spec := range []Spec{
		{Name: ShareGPT, Path: big, NumPrompts: 1},
		{Name: TxtSlices, Path: big, NumPrompts: 1, TxtSlices: TxtSlicesParams{InputLen: 4, OutputLen: 4}},
	} {
		_, err := Load(context.Background(), spec, tok)
		require.Error(t, err)
		assert.Contains(t, err.Error(), big+":"+want)
	}
	_, err := Load(context.Background(), Spec{Name: ShareGPT, Path: small, NumPrompts: 1}, tok)
	if err != nil {
		assert.NotContains(t, err.Error(), "MaxFileBytes")
	}

	fifo := filepath.Join(dir, "fifo.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.Write([]byte("[" + strings.Repeat(" ", 1000)))
	}()
	_, err = readFileLimited(fifo)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fifo+":"+want)
}
