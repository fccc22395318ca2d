package sim

import "container/list"

// offloadTier is the slower KV tier (CPU memory) behind the KV cache: a
// block evicted from the cache with a hash is kept here by that hash, up to
// a capacity in blocks, least recently stored or used dropped first. A
// prefix lookup that runs out of cached blocks continues here; the blocks
// it finds are loaded back into the cache at a cost per block. It is owned
// by the engine goroutine.
type offloadTier struct {
	capacity int
	order    *list.List // of uint64 hashes; front is dropped first
	byHash   map[uint64]*list.Element
	stored   func() // counts a block written (metrics)
}

func newOffloadTier(capacity int, stored func()) *offloadTier {
	return &offloadTier{capacity: capacity, order: list.New(), byHash: map[uint64]*list.Element{}, stored: stored}
}

// store keeps an evicted block's hash.
func (o *offloadTier) store(h uint64) {
	if e, ok := o.byHash[h]; ok {
		o.order.MoveToBack(e)
		return
	}
	o.byHash[h] = o.order.PushBack(h)
	o.stored()
	for o.order.Len() > o.capacity {
		delete(o.byHash, o.order.Remove(o.order.Front()).(uint64))
	}
}

// reset drops every block the tier holds.
func (o *offloadTier) reset() {
	o.order.Init()
	clear(o.byHash)
}

// match returns how many of hashes, from the first, the tier holds, and
// marks them used.
func (o *offloadTier) match(hashes []uint64) int {
	n := 0
	for _, h := range hashes {
		e, ok := o.byHash[h]
		if !ok {
			break
		}
		o.order.MoveToBack(e)
		n++
	}
	return n
}
