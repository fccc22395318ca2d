package tokenizer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// writeHubCache lays a tokenizer out the way huggingface_hub caches it.
func writeHubCache(tb testing.TB, cache, model, commit string) {
	tb.Helper()
	data, err := os.ReadFile(fixtures.Tokenizer(tb, fixtures.BERT))
	require.NoError(tb, err)
	dir := filepath.Join(cache, "models--"+strings.ReplaceAll(model, "/", "--"))
	snap := filepath.Join(dir, "snapshots", commit)
	require.NoError(tb, os.MkdirAll(snap, 0o755))
	require.NoError(tb, os.MkdirAll(filepath.Join(dir, "refs"), 0o755))
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "refs", "main"), []byte(commit+"\n"), 0o644))
	require.NoError(tb, os.WriteFile(filepath.Join(snap, "tokenizer.json"), data, 0o644))
}

func TestFromPretrainedCache(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")
	writeHubCache(t, filepath.Join(home, "hub"), "google/bert-base-uncased", "abc123")

	tk, err := FromPretrained(context.Background(), "google/bert-base-uncased", Hub{})
	require.NoError(t, err)
	defer tk.Close()
	require.Equal(t, "google/bert-base-uncased", tk.Name())
	require.Equal(t, []int{7592, 2088}, tk.Encode("hello world", false))
}

func TestFromPretrainedPathAndDir(t *testing.T) {
	path := fixtures.Tokenizer(t, fixtures.BERT)
	tk, err := FromPretrained(context.Background(), path, Hub{})
	require.NoError(t, err)
	tk.Close()

	dir := t.TempDir()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644))
	tk, err = FromPretrained(context.Background(), dir, Hub{})
	require.NoError(t, err)
	tk.Close()
}

func TestFromPretrainedNotCachedNeverDownloads(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	cache := t.TempDir()
	_, err := FromPretrained(context.Background(), "org/missing", Hub{CacheDir: cache, Endpoint: srv.URL})
	require.ErrorIs(t, err, ErrNotCached)
	require.ErrorContains(t, err, filepath.Join(cache, "models--org--missing", "snapshots", "main", "tokenizer.json"))
	require.Zero(t, hits, "no download unless Hub.Download is set")
}

// TestFromPretrainedDownload downloads from a hub endpoint on loopback into
// the hub cache layout, then finds it again offline.
func TestFromPretrainedDownload(t *testing.T) {
	data, err := os.ReadFile(fixtures.Tokenizer(t, fixtures.BERT))
	require.NoError(t, err)
	var gotAuth, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		w.Header().Set("X-Repo-Commit", "deadbeef")
		w.Write(data)
	}))
	defer srv.Close()
	cache := t.TempDir()
	hub := Hub{CacheDir: cache, Endpoint: srv.URL, Token: "hf_secret", Download: true}
	tk, err := FromPretrained(context.Background(), "org/bert", hub)
	require.NoError(t, err)
	tk.Close()
	require.Equal(t, "Bearer hf_secret", gotAuth)
	require.Equal(t, "/org/bert/resolve/main/tokenizer.json", gotPath)

	srv.Close()
	hub.Download = false
	path, err := hub.Locate("org/bert")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cache, "models--org--bert", "snapshots", "deadbeef", "tokenizer.json"), path)
}

func TestFromPretrainedDownloadError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gated", http.StatusUnauthorized)
	}))
	defer srv.Close()
	_, err := FromPretrained(context.Background(), "org/gated", Hub{CacheDir: t.TempDir(), Endpoint: srv.URL, Download: true})
	require.ErrorContains(t, err, "401 Unauthorized")
}
