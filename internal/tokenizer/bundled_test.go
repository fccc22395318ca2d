package tokenizer

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// The bundled files are the module's test/data files, byte for byte.
func TestBundledMatchesModule(t *testing.T) {
	for name, file := range map[string]string{Llama3: fixtures.Llama3, BERT: fixtures.BERT} {
		want, err := os.ReadFile(fixtures.Tokenizer(t, file))
		require.NoError(t, err)
		got, err := BundledJSON(name)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "bundled %s differs from %s", name, file)
	}
}

func TestLoadBundled(t *testing.T) {
	tk, err := Load(context.Background(), Llama3, Hub{})
	require.NoError(t, err)
	defer tk.Close()
	require.Equal(t, Llama3, tk.Name())
	require.Equal(t, 128256, tk.VocabSize())

	_, err = BundledJSON("gpt2")
	require.ErrorContains(t, err, `bundled tokenizer "gpt2": no such tokenizer`)
	// Not bundled and not cached: FromPretrained's error, no download.
	_, err = Load(context.Background(), "no-such-org/no-such-model", Hub{CacheDir: t.TempDir()})
	require.ErrorIs(t, err, ErrNotCached)
}
