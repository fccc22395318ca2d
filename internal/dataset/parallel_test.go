package dataset

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/fixtures"
)

// TestDrawQueueOrder starts prompts in reverse order (prompt i wakes after
// n-i fake milliseconds) and checks that their draws still come from the
// generator in prompt order.
func TestDrawQueueOrder(t *testing.T) {
	const n = 20
	want := newNPGenerator(9).integers(0, 1000, n)
	synctest.Test(t, func(t *testing.T) {
		q := newDrawQueue(newNPGenerator(9), 1000, n)
		got := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				time.Sleep(time.Duration(n-i) * time.Millisecond)
				got[i] = q.drawer(i)(1)[0]
				q.finish(i)
			})
		}
		wg.Wait()
		assert.Equal(t, want, got)
	})
}

// TestRandomParallelMatchesSequential builds prompts on one goroutine and on
// eight and expects the same samples.
func TestRandomParallelMatchesSequential(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	spec := Spec{NumPrompts: 300, Seed: 5, Random: RandomParams{InputLen: 24, RangeRatio: 0.5, PrefixLen: 3}}
	load := func(procs int) []Sample {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		got, err := Load(context.Background(), spec, tok)
		require.NoError(t, err)
		return got
	}
	assert.Equal(t, load(1), load(8))
}
