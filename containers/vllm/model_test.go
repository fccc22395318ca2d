package vllm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/tokenizer"
)

func TestTinyModelFiles(t *testing.T) {
	files, err := TinyModelFiles()
	require.NoError(t, err)
	var cfg struct {
		VocabSize int `json:"vocab_size"`
	}
	require.NoError(t, json.Unmarshal(files["config.json"], &cfg))
	tok, err := tokenizer.Bundled(tokenizer.Llama3)
	require.NoError(t, err)
	defer tok.Close()
	assert.Equal(t, tok.VocabSize(), cfg.VocabSize, "the config's vocabulary is the tokenizer's")
	var tc map[string]any
	require.NoError(t, json.Unmarshal(files["tokenizer_config.json"], &tc))
	assert.Contains(t, tc["chat_template"], "<|start_header_id|>", "Llama-3's chat template")

	dir := t.TempDir()
	require.NoError(t, WriteTinyModel(dir))
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	require.NoError(t, err)
	assert.Equal(t, files["tokenizer.json"], b)
}

func TestOfflineModel(t *testing.T) {
	// A hub cache holding one model's snapshot, and one with a tokenizer only.
	hub := t.TempDir()
	snapshot := func(model string, files ...string) {
		repo := filepath.Join(hub, "models--"+strings.ReplaceAll(model, "/", "--"))
		dir := filepath.Join(repo, "snapshots", "abc")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(repo, "refs"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("abc"), 0o644))
		for _, f := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644))
		}
	}
	snapshot("org/full", "config.json", "tokenizer.json")
	snapshot("org/half", "tokenizer.json")
	modelDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(modelDir, "config.json"), []byte("{}"), 0o644))
	h := tokenizer.Hub{CacheDir: hub}

	t.Run("tiny", func(t *testing.T) {
		o, req := request(t, WithOfflineModel("", h), WithExtraArgs("--max-num-seqs", "4"))
		assert.Equal(t, []string{"/models/tiny-llama", "--host", "0.0.0.0", "--port", "8000", "--served-model-name", TinyModel,
			"--load-format", "dummy", "--dtype", "float32", "--max-num-seqs", "4"}, []string(req.Cmd))
		assert.Len(t, req.Files, 3)
		assert.Equal(t, TinyModel, o.servedName())
	})
	t.Run("directory", func(t *testing.T) {
		o, req := request(t, WithOfflineModel(modelDir, h))
		target := "/models/" + filepath.Base(modelDir)
		assert.Equal(t, target, req.Cmd[0])
		assert.Equal(t, target, o.modelDirs[modelDir])
		var hc container.HostConfig
		o.hostConfig(&hc)
		require.Len(t, hc.Mounts, 1)
		assert.Equal(t, mount.Mount{Type: mount.TypeBind, Source: modelDir, Target: target, ReadOnly: true}, hc.Mounts[0])
	})
	t.Run("hf id in the cache", func(t *testing.T) {
		o, req := request(t, WithOfflineModel("org/full", h))
		assert.Equal(t, "org/full", req.Cmd[0])
		assert.Equal(t, "1", req.Env["HF_HUB_OFFLINE"])
		var hc container.HostConfig
		o.hostConfig(&hc)
		require.Len(t, hc.Mounts, 1)
		assert.Equal(t, mount.Mount{Type: mount.TypeBind, Source: hub, Target: "/root/.cache/huggingface/hub"}, hc.Mounts[0])
	})
	for name, model := range map[string]string{
		"not anywhere":         "org/absent",
		"tokenizer only":       "org/half",
		"dir without a config": t.TempDir(),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Run(context.Background(), "any/image:1", WithOfflineModel(model, h), withImages(fakeImages{}))
			assert.Nil(t, c, "no container starts")
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrModelNotFound), "%v", err)
			assert.Contains(t, err.Error(), model)
		})
	}
}
