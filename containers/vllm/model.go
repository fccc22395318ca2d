package vllm

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/internal/tokenizer"
)

const (
	// TinyModel is the served name of the tiny model (TinyModelFiles): a
	// two-layer Llama with the Llama-3 vocabulary and no weights, served
	// with --load-format dummy (random weights made at load), so a real
	// vLLM runs with no download and loads in seconds on CPU.
	TinyModel = "tiny-llama"
	// modelsDir is where model directories are mounted or copied.
	modelsDir = "/models"
	// hubCachePath is the container's Hugging Face hub cache.
	hubCachePath = hfCachePath + "/hub"
)

// TinyModelArgs are the vllm serve flags the tiny model needs: random
// weights instead of a checkpoint, and float32 (its config says bfloat16,
// which AVX2 CPUs compute slowly).
var TinyModelArgs = []string{"--load-format", "dummy", "--dtype", "float32"}

//go:embed tinyllama/*.json
var tinyFS embed.FS

// TinyModelFiles returns the tiny model's files by name: config.json and
// tokenizer_config.json (Llama-3's chat template) shipped in this package,
// and tokenizer.json, the bundled Llama-3 tokenizer, so token counts on the
// server match servegate's default tokenizer.
func TinyModelFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range []string{"config.json", "tokenizer_config.json"} {
		b, err := tinyFS.ReadFile("tinyllama/" + name)
		if err != nil {
			return nil, fmt.Errorf("tiny model: %w", err)
		}
		files[name] = b
	}
	tok, err := tokenizer.BundledJSON(tokenizer.Llama3)
	if err != nil {
		return nil, fmt.Errorf("tiny model: %w", err)
	}
	files["tokenizer.json"] = tok
	return files, nil
}

// WriteTinyModel writes TinyModelFiles into dir (created if needed), for a
// vLLM started outside a container (vllm serve DIR --load-format dummy).
func WriteTinyModel(dir string) error {
	files, err := TinyModelFiles()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write tiny model: %w", err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write tiny model: %w", err)
		}
	}
	return nil
}

// ErrModelNotFound is wrapped by the error WithOfflineModel returns for a
// model that is neither a directory nor in the Hugging Face cache.
var ErrModelNotFound = errors.New("model not found offline")

// WithOfflineModel serves model with no network access, whatever it is:
//
//   - "" or TinyModel: the tiny model, copied into the container and served
//     with TinyModelArgs under the name TinyModel;
//   - a directory on this machine (holding config.json): mounted read-only
//     at /models/<its name> and served from there;
//   - a Hugging Face model id whose snapshot (config.json and
//     tokenizer.json) is in hub's cache: the cache is mounted and
//     HF_HUB_OFFLINE=1 is set, so vLLM reads it and never downloads.
//
// Anything else makes Run fail before any container starts, with an error
// wrapping ErrModelNotFound that says where it looked.
func WithOfflineModel(model string, hub tokenizer.Hub) Option {
	return func(o *options) error {
		switch {
		case model == "" || model == TinyModel:
			return o.useTinyModel()
		case isDir(model):
			return o.useModelDir(model)
		}
		snap, err := hub.Locate(model)
		if err != nil {
			return fmt.Errorf("model %s: %w: not a directory, and %v; no download at test time: "+
				"pass a model directory, fetch it into the cache first (huggingface-cli download %s), or leave the model empty for the tiny model",
				model, ErrModelNotFound, err, model)
		}
		snapDir := filepath.Dir(snap)
		if _, err := os.Stat(filepath.Join(snapDir, "config.json")); err != nil {
			return fmt.Errorf("model %s: %w: the Hugging Face cache has its tokenizer but no config.json in %s; fetch the whole model (huggingface-cli download %s)",
				model, ErrModelNotFound, snapDir, model)
		}
		// snapshots/<rev>/tokenizer.json -> the hub cache holding models--org--name.
		o.hubCacheHostDir = filepath.Dir(filepath.Dir(filepath.Dir(snapDir)))
		o.hfCacheHostDir, o.hfCacheVolume = "", ""
		o.env["HF_HUB_OFFLINE"] = "1"
		o.model = model
		return nil
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func (o *options) useTinyModel() error {
	files, err := TinyModelFiles()
	if err != nil {
		return err
	}
	dir := path.Join(modelsDir, TinyModel)
	for name, b := range files {
		o.files = append(o.files, testcontainers.ContainerFile{
			Reader:            bytes.NewReader(b),
			ContainerFilePath: path.Join(dir, name),
			FileMode:          0o644,
		})
	}
	o.model = dir
	if o.servedModelName == "" {
		o.servedModelName = TinyModel
	}
	o.extraArgs = append(append([]string(nil), TinyModelArgs...), o.extraArgs...)
	return nil
}

func (o *options) useModelDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("model %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "config.json")); err != nil {
		return fmt.Errorf("model %s: %w: a model directory needs config.json (%v)", dir, ErrModelNotFound, err)
	}
	target := path.Join(modelsDir, strings.ReplaceAll(filepath.Base(abs), " ", "_"))
	o.modelDirs[abs] = target
	o.model = target
	return nil
}
