package vllm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/containers/vllm"
	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

// e2eEnv names the variable that turns on the tests against a real vLLM.
const e2eEnv = "SERVEGATE_E2E_VLLM"

// requireE2E skips the test unless SERVEGATE_E2E_VLLM=1: it needs a real vLLM
// (the image `make vllm-image` builds, or a running server) and minutes.
func requireE2E(tb testing.TB) {
	tb.Helper()
	if os.Getenv(e2eEnv) != "1" {
		tb.Skipf("real vLLM end-to-end test: set %s=1 (`make e2e-vllm` builds the image and runs it)", e2eEnv)
	}
}

// writeTinyModel writes the tiny model (vllm.WriteTinyModel). With allEOS,
// generation_config.json makes every token id an end-of-sequence token, so
// a request without ignore_eos stops after one token and ignore_eos is
// visible.
func writeTinyModel(tb testing.TB, dir string, allEOS bool) {
	tb.Helper()
	require.NoError(tb, vllm.WriteTinyModel(dir))
	if allEOS {
		ids := make([]int, 128256)
		for i := range ids {
			ids[i] = i
		}
		b, err := json.Marshal(map[string]any{"bos_token_id": 128000, "eos_token_id": ids})
		require.NoError(tb, err)
		require.NoError(tb, os.WriteFile(filepath.Join(dir, "generation_config.json"), b, 0o644))
	}
}

// llama3 loads the Llama-3 tokenizer fixture.
func llama3(tb testing.TB) *tokenizer.Tokenizer {
	tb.Helper()
	tok, err := tokenizer.FromFile(fixtures.Tokenizer(tb, fixtures.Llama3))
	require.NoError(tb, err)
	tb.Cleanup(func() { tok.Close() })
	return tok
}

// randomSamples makes n prompts the way vLLM's random dataset does: inLen
// random non-special token ids decoded to text. PromptLen is the text
// re-encoded with BOS, as vLLM's custom dataset counts it, so the same
// prompts in a JSONL file give vllm bench serve the same lengths.
func randomSamples(tok *tokenizer.Tokenizer, n, inLen, outLen int, seed uint64) []dataset.Sample {
	rng := rand.New(rand.NewPCG(seed, 0x5e77e))
	special := tok.SpecialIDs()
	out := make([]dataset.Sample, n)
	for i := range out {
		ids := make([]int, 0, inLen)
		for len(ids) < inLen {
			id := rng.IntN(tok.BaseVocabSize())
			if !slices.Contains(special, id) {
				ids = append(ids, id)
			}
		}
		text := tok.Decode(ids, true)
		out[i] = dataset.Sample{
			Prompt:    text,
			PromptLen: len(tok.Encode(text, true)),
			OutputLen: outLen,
			RequestID: "e2e-" + strconv.Itoa(i),
		}
	}
	return out
}

// jsonl renders samples as a custom dataset for vllm bench serve
// (--dataset-name custom --skip-chat-template --disable-shuffle).
func jsonl(samples []dataset.Sample) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, s := range samples {
		if err := enc.Encode(map[string]string{"prompt": s.Prompt}); err != nil {
			return nil, fmt.Errorf("jsonl: %w", err)
		}
	}
	return b.Bytes(), nil
}

// envInt reads an integer setting with a default.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(tb, err, name)
	return n
}
