package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/servegate/servegate/internal/tokenizer"
)

// DefaultCacheBytes is a Cache's memory bound when MaxBytes is zero: 256 MiB
// of sample text. The default random dataset (1,000 prompts of 1,024
// tokens) takes about 5 MiB.
const DefaultCacheBytes = 256 << 20

// sampleOverhead is what a Cache counts for each sample beside its text:
// the Sample struct and slice headers, rounded up.
const sampleOverhead = 128

// A Cache keeps the samples of recent Loads in memory, so that a process
// that runs the same scenario again (go test -count 10, a paired run, a
// repeated capacity search's base plan) builds and tokenizes its prompts
// once. Its zero value is ready to use and safe for concurrent use.
//
// The key holds everything that changes the samples: the whole Spec (name,
// count, seed, request-id prefix, backend, every dataset's parameters), the
// tokenizer (its name and the loaded object: a tokenizer loaded again is
// another key), the chat template and special tokens in effect (the
// tokenizer_config.json that Load would read beside the tokenizer, by
// content), and the SHA-256 of the dataset file's content, read on every
// Load (cheap beside tokenizing it). Anything else is not cached: there is
// no on-disk cache.
//
// Memory is bounded by MaxBytes of sample text (prompts, documents, inputs
// and request ids, plus sampleOverhead per sample): the least recently used
// entries are dropped to make room, and a result larger than the whole
// bound is returned but not kept.
type Cache struct {
	// MaxBytes bounds the text kept, in bytes; 0 means DefaultCacheBytes,
	// negative keeps nothing.
	MaxBytes int64

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*cacheEntry
	recent  [][sha256.Size]byte // least recently used first
	size    int64
	loads   int
}

type cacheEntry struct {
	samples []Sample
	size    int64
}

// Load returns Load(ctx, spec, tok), from memory when an equal key was
// loaded before and is still kept. The slice is the caller's own; the
// samples' Documents and Inputs are shared and must not be changed.
func (c *Cache) Load(ctx context.Context, spec Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	key, ok := c.key(spec, tok)
	if !ok {
		return c.load(ctx, spec, tok)
	}
	c.mu.Lock()
	if e, hit := c.entries[key]; hit {
		c.touch(key)
		c.mu.Unlock()
		return slices.Clone(e.samples), nil
	}
	c.mu.Unlock()
	samples, err := c.load(ctx, spec, tok)
	if err != nil {
		return nil, err
	}
	c.put(key, samples)
	return slices.Clone(samples), nil
}

// Loads is how many times the Cache has run Load (its misses).
func (c *Cache) Loads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// Bytes is the size of what the Cache keeps, as MaxBytes counts it.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

func (c *Cache) load(ctx context.Context, spec Spec, tok *tokenizer.Tokenizer) ([]Sample, error) {
	c.mu.Lock()
	c.loads++
	c.mu.Unlock()
	return Load(ctx, spec, tok)
}

// key hashes everything that changes Load's samples; ok is false when
// something cannot be read (Load then reports it).
func (c *Cache) key(spec Spec, tok *tokenizer.Tokenizer) (key [sha256.Size]byte, ok bool) {
	if tok == nil {
		return key, false
	}
	s := spec.withDefaults()
	if s.TokenizerConfig == nil {
		cfg, err := configBeside(tok.Name())
		if err != nil {
			return key, false
		}
		s.TokenizerConfig = cfg
	}
	h := sha256.New()
	enc := json.NewEncoder(h)
	if err := enc.Encode(s); err != nil {
		return key, false
	}
	fmt.Fprintf(h, "tokenizer %q %p\n", tok.Name(), tok)
	if s.Path != "" {
		f, err := os.Open(s.Path)
		if err != nil {
			return key, false
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return key, false
		}
	}
	copy(key[:], h.Sum(nil))
	return key, true
}

// put keeps samples under key, dropping the least recently used entries to
// stay within the bound.
func (c *Cache) put(key [sha256.Size]byte, samples []Sample) {
	size := samplesSize(samples)
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := c.MaxBytes
	if limit == 0 {
		limit = DefaultCacheBytes
	}
	if _, dup := c.entries[key]; dup || size > limit {
		return
	}
	for c.size+size > limit && len(c.recent) > 0 {
		old := c.recent[0]
		c.recent = c.recent[1:]
		c.size -= c.entries[old].size
		delete(c.entries, old)
	}
	if c.entries == nil {
		c.entries = map[[sha256.Size]byte]*cacheEntry{}
	}
	c.entries[key] = &cacheEntry{samples: samples, size: size}
	c.recent = append(c.recent, key)
	c.size += size
}

// touch makes key the most recently used; c.mu is held.
func (c *Cache) touch(key [sha256.Size]byte) {
	if i := slices.Index(c.recent, key); i >= 0 {
		c.recent = append(slices.Delete(c.recent, i, i+1), key)
	}
}

// samplesSize is what samples count against a Cache's bound.
func samplesSize(samples []Sample) int64 {
	n := int64(len(samples)) * sampleOverhead
	for _, s := range samples {
		n += int64(len(s.Prompt) + len(s.RequestID))
		for _, d := range s.Documents {
			n += int64(len(d))
		}
		for _, in := range s.Inputs {
			n += int64(len(in))
		}
	}
	return n
}
