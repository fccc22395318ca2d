package dataset

import (
	"slices"
	"testing"
)

// TestPyRandomSample checks Sample and Shuffle against CPython 3.11's
// random.sample(range(n), k) and random.shuffle after random.seed(seed)
// (values printed by python3 and written down here).
func TestPyRandomSample(t *testing.T) {
	tests := []struct {
		seed int64
		n, k int
		want []int
	}{
		{0, 100, 7, []int{49, 97, 53, 5, 33, 65, 62}},
		{99, 10, 4, []int{6, 9, 3, 4}},
		{1, 30, 30, []int{4, 18, 27, 25, 24, 2, 8, 3, 15, 14, 21, 12, 6, 22, 19, 0, 13, 17, 28, 9, 20, 7, 29, 5, 1, 23, 10, 11, 16, 26}},
		{3, 22, 6, []int{7, 18, 17, 4, 11, 15}},
	}
	for _, tt := range tests {
		if got := NewPyRandom(tt.seed).Sample(tt.n, tt.k); !slices.Equal(got, tt.want) {
			t.Errorf("seed %d: Sample(%d, %d) = %v, want %v", tt.seed, tt.n, tt.k, got, tt.want)
		}
	}
	got := NewPyRandom(5).Sample(1000, 128)
	if head := []int{637, 261, 759, 367, 814, 707}; !slices.Equal(got[:6], head) || got[127] != 121 {
		t.Errorf("seed 5: Sample(1000, 128) starts %v, ends %d; want %v ... 121", got[:6], got[127], head)
	}
	x := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	NewPyRandom(7).Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	if want := []int{7, 11, 3, 10, 8, 4, 9, 1, 0, 6, 2, 5}; !slices.Equal(x, want) {
		t.Errorf("Shuffle = %v, want %v", x, want)
	}
}
