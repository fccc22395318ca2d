package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Hub says where FromPretrained looks for a model's tokenizer and whether it
// may download one. The zero value reads the environment the way Hugging Face
// tools do and never downloads.
type Hub struct {
	// CacheDir is the hub cache directory (the one holding models--org--name
	// folders). Default: $HF_HUB_CACHE, else $HF_HOME/hub, else
	// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
	CacheDir string
	// Token authenticates downloads. Default: $HF_TOKEN. It is sent only to
	// Endpoint and never logged.
	Token string
	// Revision is the branch, tag or commit. Default: main.
	Revision string
	// Endpoint is the hub's base URL. Default: $HF_ENDPOINT, else
	// https://huggingface.co.
	Endpoint string
	// Download allows fetching tokenizer.json when it is not cached. Tests
	// never set it.
	Download bool
}

func (h Hub) cacheDir() string {
	if h.CacheDir != "" {
		return h.CacheDir
	}
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

func (h Hub) revision() string {
	if h.Revision != "" {
		return h.Revision
	}
	return "main"
}

func (h Hub) endpoint() string {
	if h.Endpoint != "" {
		return strings.TrimRight(h.Endpoint, "/")
	}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		return strings.TrimRight(e, "/")
	}
	return "https://huggingface.co"
}

func (h Hub) token() string {
	if h.Token != "" {
		return h.Token
	}
	return os.Getenv("HF_TOKEN")
}

// FromPretrained loads the tokenizer of a model. The model is a directory
// holding tokenizer.json, a tokenizer.json path, or a hub model id
// ("meta-llama/Meta-Llama-3-8B-Instruct") looked up in the local cache. When
// it is not cached, FromPretrained returns an error wrapping ErrNotCached
// unless hub.Download is set.
func FromPretrained(ctx context.Context, model string, hub Hub) (*Tokenizer, error) {
	if st, err := os.Stat(model); err == nil {
		path := model
		if st.IsDir() {
			path = filepath.Join(model, "tokenizer.json")
		}
		return FromFile(path)
	}
	path, err := hub.Locate(model)
	if errors.Is(err, ErrNotCached) && hub.Download {
		path, err = hub.download(ctx, model)
	}
	if err != nil {
		return nil, err
	}
	t, err := FromFile(path)
	if err != nil {
		return nil, err
	}
	t.name = model
	return t, nil
}

// Locate returns the cached tokenizer.json of a model id, or an error
// wrapping ErrNotCached that names the directory it looked in.
func (h Hub) Locate(model string) (string, error) {
	dir := filepath.Join(h.cacheDir(), "models--"+strings.ReplaceAll(model, "/", "--"))
	rev := h.revision()
	if ref, err := os.ReadFile(filepath.Join(dir, "refs", rev)); err == nil {
		rev = strings.TrimSpace(string(ref))
	}
	path := filepath.Join(dir, "snapshots", rev, "tokenizer.json")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("locate tokenizer for %s: %w (looked for %s; set HF_HOME, pass a tokenizer.json path, or allow a download)", model, ErrNotCached, path)
	}
	return path, nil
}

// download fetches tokenizer.json into the cache in the hub's own layout
// (snapshots/<commit>/tokenizer.json and refs/<revision>), so that other
// Hugging Face tools find it too.
func (h Hub) download(ctx context.Context, model string) (string, error) {
	url := fmt.Sprintf("%s/%s/resolve/%s/tokenizer.json", h.endpoint(), model, h.revision())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("download tokenizer: %w", err)
	}
	if tok := h.token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("download tokenizer: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download tokenizer %s: %s", url, resp.Status)
	}
	commit := resp.Header.Get("X-Repo-Commit")
	if commit == "" {
		commit = h.revision()
	}
	dir := filepath.Join(h.cacheDir(), "models--"+strings.ReplaceAll(model, "/", "--"))
	snap := filepath.Join(dir, "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return "", fmt.Errorf("download tokenizer: %w", err)
	}
	path := filepath.Join(snap, "tokenizer.json")
	tmp, err := os.CreateTemp(snap, ".tokenizer-*.json")
	if err != nil {
		return "", fmt.Errorf("download tokenizer: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, resp.Body); err != nil {
		tmp.Close()
		return "", fmt.Errorf("download tokenizer: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("download tokenizer: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("download tokenizer: %w", err)
	}
	if commit != h.revision() {
		if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "refs", h.revision()), []byte(commit), 0o644)
		}
	}
	return path, nil
}
