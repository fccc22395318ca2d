package conversation

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

var llama3 = sync.OnceValues(func() (*tokenizer.Tokenizer, error) { return tokenizer.Bundled(tokenizer.Llama3) })

// loadLlama3 returns the bundled Llama-3 tokenizer, loaded once per test
// binary.
func loadLlama3(tb testing.TB) *tokenizer.Tokenizer {
	tb.Helper()
	tok, err := llama3()
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// writeFile writes content to name in a fresh temporary directory and
// returns its path.
func writeFile(tb testing.TB, name, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// mustLoad loads src and fails the test on an error.
func mustLoad(tb testing.TB, src Source, baseDir string, seed int64) []Conversation {
	tb.Helper()
	convs, err := Load(context.Background(), src, baseDir, loadLlama3(tb), seed)
	if err != nil {
		tb.Fatal(err)
	}
	return convs
}

// checkCounts fails unless every turn's UserTokens is the tokenizer's
// count of its text.
func checkCounts(tb testing.TB, convs []Conversation) {
	tb.Helper()
	tok := loadLlama3(tb)
	for _, c := range convs {
		for k, t := range c.Turns {
			if n := len(dataset.EncodeText(tok, t.User)); n != t.UserTokens {
				tb.Fatalf("%s turn %d: UserTokens %d, the tokenizer counts %d", c.ID, k, t.UserTokens, n)
			}
		}
	}
}

func dist(name string, f func(*Distribution)) *Distribution {
	d := &Distribution{Distribution: name}
	if f != nil {
		f(d)
	}
	return d
}

func constant(v float64) *Distribution { return &Distribution{Distribution: Constant, Value: v} }

func uniform(lo, hi float64) *Distribution {
	return &Distribution{Distribution: Uniform, Min: lo, Max: hi}
}
