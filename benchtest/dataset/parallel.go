package dataset

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// parallel calls f(i) for every i in [0, n) on up to GOMAXPROCS goroutines
// and returns ctx's error if it is cancelled before all are done. f must
// write only to its own index.
func parallel(ctx context.Context, n int, f func(i int)) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
