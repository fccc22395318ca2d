package dataset

import "math/bits"

// npGenerator is numpy's default_rng(seed): a PCG64 bit generator seeded
// through SeedSequence, with Generator.integers' bounded draws (Lemire's
// method on buffered 32-bit outputs). vLLM's random datasets draw lengths,
// offsets, the shared prefix and fix-up tokens from it, so reproducing it
// makes servegate's random prompts those of vllm bench serve for the same
// seed.
type npGenerator struct {
	hi, lo       uint64 // 128-bit LCG state
	incHi, incLo uint64 // 128-bit increment (odd)
	has32        bool   // a buffered upper half is waiting
	buf32        uint32
}

// SeedSequence's hashing constants.
const (
	ssInitA    = 0x43b0d7e5
	ssMultA    = 0x931e8875
	ssInitB    = 0x8b51f9dd
	ssMultB    = 0x58f38ded
	ssMixMultL = 0xca01f9dd
	ssMixMultR = 0x4973f715
	ssPoolSize = 4
)

// PCG64's 128-bit multiplier.
const pcgMulHi, pcgMulLo = 0x2360ED051FC65DA4, 0x4385DF649FCCF645

// seedWords splits |seed| into 32-bit words, least significant first (0 is
// one zero word): how numpy coerces an integer seed's entropy and how
// CPython's random.seed keys init_by_array. A negative seed is taken as its
// absolute value, as CPython does (numpy rejects it).
func seedWords(seed int64) []uint32 {
	u := uint64(seed)
	if seed < 0 {
		u = -u
	}
	if hi := uint32(u >> 32); hi != 0 {
		return []uint32{uint32(u), hi}
	}
	return []uint32{uint32(u)}
}

// seedSequenceState is SeedSequence(entropy).generate_state(n, uint32).
func seedSequenceState(entropy []uint32, n int) []uint32 {
	hashConst := uint32(ssInitA)
	hashmix := func(v uint32) uint32 {
		v ^= hashConst
		hashConst *= ssMultA
		v *= hashConst
		return v ^ v>>16
	}
	mix := func(x, y uint32) uint32 {
		r := ssMixMultL*x - ssMixMultR*y
		return r ^ r>>16
	}
	var pool [ssPoolSize]uint32
	for i := range pool {
		var v uint32
		if i < len(entropy) {
			v = entropy[i]
		}
		pool[i] = hashmix(v)
	}
	for src := range pool {
		for dst := range pool {
			if src != dst {
				pool[dst] = mix(pool[dst], hashmix(pool[src]))
			}
		}
	}
	for src := ssPoolSize; src < len(entropy); src++ {
		for dst := range pool {
			pool[dst] = mix(pool[dst], hashmix(entropy[src]))
		}
	}
	out := make([]uint32, n)
	hashConst = ssInitB
	for i := range out {
		v := pool[i%ssPoolSize]
		v ^= hashConst
		hashConst *= ssMultB
		v *= hashConst
		out[i] = v ^ v>>16
	}
	return out
}

// newNPGenerator returns numpy.random.default_rng(seed). numpy rejects
// negative seeds; here a negative seed is taken as its absolute value.
func newNPGenerator(seed int64) *npGenerator {
	w := seedSequenceState(seedWords(seed), 8)
	u64 := func(i int) uint64 { return uint64(w[2*i]) | uint64(w[2*i+1])<<32 }
	g := &npGenerator{}
	// pcg64_set_seed: state = seed[0]<<64 | seed[1], inc = inc[0]<<64 | inc[1],
	// then pcg_setseq_128_srandom_r.
	initHi, initLo, seqHi, seqLo := u64(0), u64(1), u64(2), u64(3)
	g.incHi, g.incLo = seqHi<<1|seqLo>>63, seqLo<<1|1
	g.step()
	var c uint64
	g.lo, c = bits.Add64(g.lo, initLo, 0)
	g.hi, _ = bits.Add64(g.hi, initHi, c)
	g.step()
	return g
}

// step advances the LCG: state = state*mult + inc (mod 2^128).
func (g *npGenerator) step() {
	hi, lo := bits.Mul64(g.lo, pcgMulLo)
	hi += g.hi*pcgMulLo + g.lo*pcgMulHi
	var c uint64
	g.lo, c = bits.Add64(lo, g.incLo, 0)
	g.hi, _ = bits.Add64(hi, g.incHi, c)
}

// uint64 is PCG64's next output (XSL-RR of the advanced state).
func (g *npGenerator) uint64() uint64 {
	g.step()
	return bits.RotateLeft64(g.hi^g.lo, -int(g.hi>>58))
}

// uint32 is numpy's buffered next_uint32: the low half of a 64-bit output,
// then its high half.
func (g *npGenerator) uint32() uint32 {
	if g.has32 {
		g.has32 = false
		return g.buf32
	}
	v := g.uint64()
	g.has32, g.buf32 = true, uint32(v>>32)
	return uint32(v)
}

// integers is Generator.integers(low, high, size=n) for int64 with
// high - low <= 2^32: Lemire's bounded method, and no draw at all when the
// range holds one value.
func (g *npGenerator) integers(low, high, n int) []int {
	out := make([]int, n)
	rng := uint64(high - low - 1)
	for i := range out {
		out[i] = low + int(g.bounded(rng))
	}
	return out
}

// bounded draws uniformly from [0, rng] (rng < 2^32).
func (g *npGenerator) bounded(rng uint64) uint64 {
	switch {
	case rng == 0:
		return 0
	case rng == 0xffffffff:
		return uint64(g.uint32())
	}
	excl := uint32(rng) + 1
	m := uint64(g.uint32()) * uint64(excl)
	if leftover := uint32(m); leftover < excl {
		threshold := (^uint32(0) - uint32(rng)) % excl
		for leftover < threshold {
			m = uint64(g.uint32()) * uint64(excl)
			leftover = uint32(m)
		}
	}
	return m >> 32
}
