package dataset

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Expected values printed by numpy 2.4.6:
//
//	np.random.SeedSequence(0).generate_state(4, np.uint64)
//	np.random.PCG64(0).random_raw(3)
//	r = np.random.default_rng(0)
//	r.integers(0, 128000, size=5); r.integers(5, 6, size=3); r.integers(0, 10, size=5)
//	np.random.default_rng(123456789012).integers(0, 128000, size=3)
func TestNPGeneratorMatchesNumpy(t *testing.T) {
	w := seedSequenceState(seedWords(0), 8)
	var got []uint64
	for i := range 4 {
		got = append(got, uint64(w[2*i])|uint64(w[2*i+1])<<32)
	}
	assert.Equal(t, []uint64{15793235383387715774, 12390638538380655177, 2361836109651742017, 3188717715514472916}, got)

	g := newNPGenerator(0)
	assert.Equal(t, []uint64{11749869230777074271, 4976686463289251617, 755828109848996024}, []uint64{g.uint64(), g.uint64(), g.uint64()})

	g = newNPGenerator(0)
	assert.Equal(t, []int{108879, 81531, 65425, 34532, 39402}, g.integers(0, 128000, 5))
	assert.Equal(t, []int{5, 5, 5}, g.integers(5, 6, 3))
	assert.Equal(t, []int{0, 0, 0, 1, 8}, g.integers(0, 10, 5))

	assert.Equal(t, []int{121911, 72456, 86437}, newNPGenerator(123456789012).integers(0, 128000, 3))
}
