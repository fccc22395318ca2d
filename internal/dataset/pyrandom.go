package dataset

// pyRandom is Python's random.Random: the Mersenne Twister MT19937 seeded
// from an integer the way CPython seeds it, with the integer draws that
// random.shuffle and random.choice make. vLLM shuffles file datasets and
// oversamples with Python's random module after random.seed(seed), so using
// the same generator here selects the same rows in the same order as vLLM
// for the same seed (sharegpt, custom, spec_bench, oversampling and the final
// shuffle of prefix_repetition). numpy's generators, which vLLM uses for
// token ids and lengths, are reproduced in numpy.go and, for numpy's
// legacy RandomState (the same MT19937, seeded differently), below.
type pyRandom struct {
	mt  [mtN]uint32
	idx int
}

const mtN = 624

// newPyRandom returns a generator in the state random.seed(seed) leaves:
// init_by_array over the 32-bit words of |seed|, least significant first.
func newPyRandom(seed int64) *pyRandom {
	r := &pyRandom{}
	r.initByArray(seedWords(seed))
	return r
}

func (r *pyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < mtN; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = mtN
}

func (r *pyRandom) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	for k := max(mtN, len(key)); k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= mtN {
			r.mt[0] = r.mt[mtN-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := mtN - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= mtN {
			r.mt[0] = r.mt[mtN-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

// uint32 is genrand_uint32: the next tempered output.
func (r *pyRandom) uint32() uint32 {
	if r.idx >= mtN {
		for k := range mtN {
			y := r.mt[k]&0x80000000 | r.mt[(k+1)%mtN]&0x7fffffff
			v := r.mt[(k+397)%mtN] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// below is random._randbelow(n) for 0 < n < 2**32: getrandbits of n's bit
// length, redrawn until it is below n.
func (r *pyRandom) below(n int) int {
	k := 0
	for v := n; v > 0; v >>= 1 {
		k++
	}
	for {
		if v := int(r.uint32() >> (32 - k)); v < n {
			return v
		}
	}
}

// random is random.random(): a float in [0, 1) with 53 random bits.
func (r *pyRandom) random() float64 {
	a, b := r.uint32()>>5, r.uint32()>>6
	return (float64(a)*67108864 + float64(b)) * (1.0 / 9007199254740992)
}

// pyShuffle is random.shuffle.
func pyShuffle[T any](r *pyRandom, xs []T) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.below(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// newNPLegacy returns numpy's legacy RandomState(seed) (np.random.seed(seed),
// pandas' random_state=seed): the same Mersenne Twister seeded with
// init_genrand on the seed's low 32 bits. numpy rejects seeds outside
// [0, 2^32); here they are reduced to their low 32 bits.
func newNPLegacy(seed int64) *pyRandom {
	r := &pyRandom{}
	r.initGenrand(uint32(seed))
	return r
}

// legacyRandInt is RandomState.randint(low, high, size=n) for high - low
// <= 2^32: masked rejection sampling on 32-bit outputs.
func legacyRandInt(r *pyRandom, low, high, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = low + int(r.masked(uint32(high-low-1)))
	}
	return out
}

// masked draws uniformly from [0, max] by masking 32-bit outputs to the
// smallest all-ones mask covering max and rejecting values above it (numpy's
// random_interval and bounded masked draws).
func (r *pyRandom) masked(max uint32) uint32 {
	if max == 0 {
		return 0
	}
	mask := max
	for s := 1; s < 32; s <<= 1 {
		mask |= mask >> s
	}
	for {
		if v := r.uint32() & mask; v <= max {
			return v
		}
	}
}

// legacyPermutation is RandomState.permutation(n).
func legacyPermutation(r *pyRandom, n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := int(r.masked(uint32(i)))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// pandasSample is the row positions DataFrame.sample(n, random_state=seed,
// replace=replace) picks from len rows.
func pandasSample(seed int64, rows, n int, replace bool) []int {
	r := newNPLegacy(seed)
	if replace {
		return legacyRandInt(r, 0, rows, n)
	}
	return legacyPermutation(r, rows)[:n]
}
