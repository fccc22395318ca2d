package shard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		err  string
	}{
		{"", Spec{}, ""},
		{"1/1", Spec{1, 1}, ""},
		{"2/4", Spec{2, 4}, ""},
		{" 3 / 3 ", Spec{3, 3}, ""},
		{"3/2", Spec{}, `shard "3/2": i must be between 1 and N=2`},
		{"0/2", Spec{}, `shard "0/2": i must be between 1 and N=2 (i counts from 1)`},
		{"x", Spec{}, `shard "x": want i/N`},
		{"1/x", Spec{}, `shard "1/x": want i/N with whole numbers`},
		{"1/0", Spec{}, `shard "1/0": N must be between 1 and 10000`},
		{"-1/2", Spec{}, `i must be between 1 and N=2`},
		{"1/99999999999999999999", Spec{}, `whole numbers`},
	} {
		got, err := Parse(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got)
		assert.Equal(t, tc.in != "", got.Enabled())
	}
}

// TestOwnsNamePartition checks the suite split: for every N, each name is
// owned by exactly one shard, and by the same one whatever other names
// are in the suite (the hash sees the name alone).
func TestOwnsNamePartition(t *testing.T) {
	var names []string
	for i := range 200 {
		names = append(names, fmt.Sprintf("scenario-%d", i))
	}
	for n := 1; n <= 7; n++ {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			s := Spec{i, n}
			for _, name := range names {
				if s.OwnsName(name) {
					seen[name]++
					assert.Equal(t, i, ShardOf(name, n))
				}
			}
		}
		for _, name := range names {
			assert.Equal(t, 1, seen[name], "N=%d: %s owned %d times", n, name, seen[name])
		}
		// Balance is statistical: no shard of 200 names is empty.
		a := Assign(names, n)
		for i := 1; i <= n; i++ {
			assert.NotEmpty(t, a[i], "N=%d shard %d", n, i)
		}
	}
	// Stability: the assignment of a name is a pure function of name and N.
	assert.Equal(t, ShardOf("chat-poisson", 3), ShardOf("chat-poisson", 3))
	assert.Equal(t, Assign(names[:10], 3)[ShardOf(names[0], 3)][0], names[0])
}

// TestIndicesPartition checks the load split: every request index goes to
// exactly one shard, in order.
func TestIndicesPartition(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7} {
		for _, total := range []int{0, 1, 5, 100, 101} {
			count := make([]int, total)
			for i := 1; i <= n; i++ {
				s := Spec{i, n}
				idx := s.Indices(total)
				for k, j := range idx {
					count[j]++
					assert.True(t, s.OwnsIndex(j))
					if k > 0 {
						assert.Greater(t, j, idx[k-1])
					}
				}
			}
			for j, c := range count {
				assert.Equal(t, 1, c, "N=%d total=%d index %d", n, total, j)
			}
		}
	}
	assert.Equal(t, []int{0, 1, 2}, Spec{}.Indices(3))
	assert.Equal(t, []int{1, 5, 9}, Spec{2, 4}.Indices(10))
}
