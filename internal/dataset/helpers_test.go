package dataset

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/tokenizer"
)

var (
	tokMu    sync.Mutex
	tokCache = map[string]*tokenizer.Tokenizer{}
)

// loadTokenizer returns a real tokenizer shipped with daulet/tokenizers,
// loaded once per test binary.
func loadTokenizer(tb testing.TB, name string) *tokenizer.Tokenizer {
	tb.Helper()
	tokMu.Lock()
	defer tokMu.Unlock()
	if t, ok := tokCache[name]; ok {
		return t
	}
	t, err := tokenizer.FromFile(fixtures.Tokenizer(tb, name))
	if err != nil {
		tb.Fatal(err)
	}
	tokCache[name] = t
	return t
}

// llama3Config is Meta-Llama-3-8B-Instruct's real tokenizer_config.json,
// shipped with daulet/tokenizers.
func llama3Config(tb testing.TB) *TokenizerConfig {
	tb.Helper()
	return readShippedConfig(tb, "meta-llama-3-8b-instruct")
}

func readShippedConfig(tb testing.TB, dir string) *TokenizerConfig {
	tb.Helper()
	mod, err := fixtures.TokenizersModuleDir()
	if err != nil {
		tb.Fatal(err)
	}
	c, err := ReadTokenizerConfig(filepath.Join(mod, "test", "data", dir, "tokenizer_config.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// fixture returns the path of a dataset fixture file.
func fixture(name string) string {
	return filepath.Join(fixtures.Dir(), "fixtures", "datasets", name)
}

// writeTemp writes content to a file in a test's temporary directory.
func writeTemp(tb testing.TB, name, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}
