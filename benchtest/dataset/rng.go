package dataset

import "math/rand/v2"

// Streams of randomness. Each use gets its own generator derived from the
// seed, so adding a draw in one place never shifts another's stream. The
// generators are PCG (math/rand/v2); vLLM uses numpy's PCG64 behind
// SeedSequence and Python's Mersenne Twister, whose streams are not
// reproduced here: same algorithms and distributions, different draws.
const (
	streamMain uint64 = iota + 0x5eed
	streamShuffle
	streamOversample
	streamFixup
)

// newRNG returns the generator of one stream for a seed.
func newRNG(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// fixupRNG returns the generator that request i's decode fix-up rounds draw
// from. Each request has its own so that prompts can be built in parallel
// without changing the output.
func fixupRNG(seed int64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x9e3779b97f4a7c15, streamFixup<<32|uint64(i)))
}

// integers draws n integers uniformly from [low, high), like numpy's
// Generator.integers(low, high, size=n).
func integers(r *rand.Rand, low, high, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = low + r.IntN(high-low)
	}
	return out
}

// shuffle permutes xs in place with Fisher-Yates from the end, as Python's
// random.shuffle does.
func shuffle[T any](r *rand.Rand, xs []T) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}
