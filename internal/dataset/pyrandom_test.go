package dataset

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Expected values printed by CPython 3.11:
//
//	random.seed(seed); x = list(range(12)); random.shuffle(x)
//	random.seed(7); [random.choice(range(5)) for _ in range(10)]
//	random.seed(0); [random.getrandbits(32) for _ in range(3)]
func TestPyRandomMatchesCPython(t *testing.T) {
	r := newPyRandom(0)
	assert.Equal(t, []uint32{3626764237, 1654615998, 3255389356}, []uint32{r.uint32(), r.uint32(), r.uint32()})
	for _, tt := range []struct {
		seed int64
		want []int
	}{
		{0, []int{1, 9, 8, 5, 10, 2, 3, 7, 4, 0, 11, 6}},
		{1, []int{7, 11, 0, 8, 5, 6, 3, 10, 4, 1, 9, 2}},
		{42, []int{7, 5, 2, 8, 9, 6, 11, 3, 4, 0, 1, 10}},
		{-5, []int{10, 2, 11, 7, 1, 3, 6, 0, 8, 5, 4, 9}},
		{1<<40 + 3, []int{10, 7, 2, 6, 9, 11, 5, 4, 1, 8, 0, 3}},
	} {
		x := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
		pyShuffle(newPyRandom(tt.seed), x)
		assert.Equal(t, tt.want, x, "seed %d", tt.seed)
	}
	r = newPyRandom(7)
	var choices []int
	for range 10 {
		choices = append(choices, r.below(5))
	}
	assert.Equal(t, []int{2, 1, 3, 0, 0, 4, 0, 2, 4, 0}, choices)
	r = newPyRandom(3)
	assert.Equal(t, []float64{0.23796462709189137, 0.5442292252959519}, []float64{r.random(), r.random()})
}

// Expected values printed by numpy 2.4.6 and pandas:
//
//	np.random.seed(0); np.random.randint(0, 128000, size=5); np.random.randint(0, 10, size=5)
//	np.random.RandomState(3).permutation(10)
//	df = pd.DataFrame({"a": range(6)})
//	df.sample(n=6, random_state=3); df.sample(n=4, random_state=3); df.sample(n=8, random_state=3, replace=True)
func TestNPLegacyMatchesNumpy(t *testing.T) {
	r := newNPLegacy(0)
	assert.Equal(t, []int{68268, 43567, 42613, 117952, 45891}, legacyRandInt(r, 0, 128000, 5))
	assert.Equal(t, []int{3, 7, 9, 3, 5}, legacyRandInt(r, 0, 10, 5))
	assert.Equal(t, []int{5, 4, 1, 2, 9, 6, 7, 0, 3, 8}, legacyPermutation(newNPLegacy(3), 10))
	assert.Equal(t, []int{3, 5, 4, 1, 0, 2}, pandasSample(3, 6, 6, false))
	assert.Equal(t, []int{3, 5, 4, 1}, pandasSample(3, 6, 4, false))
	assert.Equal(t, []int{2, 0, 1, 3, 0, 0, 0, 5}, pandasSample(3, 6, 8, true))
}
