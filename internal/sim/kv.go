package sim

import (
	"container/list"
	"encoding/binary"
	"hash/fnv"
)

// kvCache is a paged KV cache of fixed-size blocks with prefix caching, the
// way vLLM's block pool keeps it: a block a sequence filled completely gets
// the chained hash of its tokens; when its last user frees it, it stays
// findable by that hash until it is evicted, least recently freed first.
// It is owned by the engine goroutine and not safe for concurrent use.
type kvCache struct {
	blockSize int
	prefix    bool
	blocks    []kvBlock
	free      *list.List // block ids with ref 0; front is evicted first
	cached    map[uint64]int
	offload   *offloadTier // where evicted hashed blocks go; nil for none
}

type kvBlock struct {
	hash   uint64
	hashed bool
	ref    int
	elem   *list.Element
}

func newKVCache(numBlocks, blockSize int, prefix bool) *kvCache {
	c := &kvCache{
		blockSize: blockSize,
		prefix:    prefix,
		blocks:    make([]kvBlock, numBlocks),
		free:      list.New(),
		cached:    make(map[uint64]int),
	}
	for i := range c.blocks {
		c.blocks[i].elem = c.free.PushBack(i)
	}
	return c
}

// numFree is the number of blocks that can be allocated now (free ones and
// cached ones nobody uses).
func (c *kvCache) numFree() int { return c.free.Len() }

// usage is the fraction of blocks in use, vLLM's kv_cache_usage_perc.
func (c *kvCache) usage() float64 {
	return 1 - float64(c.free.Len())/float64(len(c.blocks))
}

// lookup returns the blocks holding the longest cached prefix of hashes.
// It takes no references.
func (c *kvCache) lookup(hashes []uint64) []int {
	if !c.prefix {
		return nil
	}
	var ids []int
	for _, h := range hashes {
		id, ok := c.cached[h]
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	return ids
}

// take adds a reference to each block, removing unused ones from the free
// queue.
func (c *kvCache) take(ids []int) {
	for _, id := range ids {
		b := &c.blocks[id]
		if b.ref == 0 {
			c.free.Remove(b.elem)
			b.elem = nil
		}
		b.ref++
	}
}

// allocate returns n fresh blocks, evicting cached ones from the front of
// the free queue, or false when fewer than n are free.
func (c *kvCache) allocate(n int) ([]int, bool) {
	if n > c.free.Len() {
		return nil, false
	}
	ids := make([]int, n)
	for i := range ids {
		e := c.free.Front()
		id := c.free.Remove(e).(int)
		b := &c.blocks[id]
		b.elem = nil
		if b.hashed {
			if c.cached[b.hash] == id {
				delete(c.cached, b.hash)
				if c.offload != nil {
					c.offload.store(b.hash)
				}
			}
			b.hashed = false
		}
		b.ref = 1
		ids[i] = id
	}
	return ids, true
}

// commit records that block id is full and holds the tokens whose chained
// hash is h.
func (c *kvCache) commit(id int, h uint64) {
	if !c.prefix {
		return
	}
	b := &c.blocks[id]
	if b.hashed {
		return
	}
	b.hash, b.hashed = h, true
	if _, dup := c.cached[h]; !dup {
		c.cached[h] = id
	}
}

// forget takes blocks out of the prefix cache: they were committed for
// contents that were never written (a load that was not issued), so
// nothing may hit them.
func (c *kvCache) forget(ids []int) {
	for _, id := range ids {
		b := &c.blocks[id]
		if b.hashed && c.cached[b.hash] == id {
			delete(c.cached, b.hash)
		}
		b.hashed = false
	}
}

// release drops one reference to each block. Blocks nobody uses go to the
// free queue, the sequence's last blocks first so that they are evicted
// before its prefix; blocks with no hash go to the front, as nothing can hit
// them.
func (c *kvCache) release(ids []int) {
	for i := len(ids) - 1; i >= 0; i-- {
		b := &c.blocks[ids[i]]
		b.ref--
		if b.ref > 0 {
			continue
		}
		if b.hashed {
			b.elem = c.free.PushBack(ids[i])
		} else {
			b.elem = c.free.PushFront(ids[i])
		}
	}
}

// resetPrefix forgets every cached block, as vLLM's reset_prefix_cache
// does. Like vLLM it refuses, returning false, while a block is in use.
func (c *kvCache) resetPrefix() bool {
	if c.free.Len() != len(c.blocks) {
		return false
	}
	clear(c.cached)
	for i := range c.blocks {
		c.blocks[i].hashed = false
	}
	return true
}

// blockHash chains a block's tokens onto its parent block's hash.
func blockHash(parent uint64, tokens []int) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], parent)
	h.Write(buf[:])
	for _, t := range tokens {
		binary.LittleEndian.PutUint64(buf[:], uint64(t))
		h.Write(buf[:])
	}
	return h.Sum64()
}
