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

// A drawQueue lets prompts built in parallel draw fix-up tokens from one
// generator in prompt order, as vLLM draws them one prompt after another:
// prompt i may draw only once every prompt before it is finished. Prompts
// that need no draw (most) never wait.
type drawQueue struct {
	g     *npGenerator
	vocab int

	mu   sync.Mutex
	cond *sync.Cond
	done []bool
	next int // every prompt below next is finished
}

func newDrawQueue(g *npGenerator, vocab, n int) *drawQueue {
	q := &drawQueue{g: g, vocab: vocab, done: make([]bool, n)}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// drawer returns prompt i's draw function. Its first call waits for the
// prompts before i to finish.
func (q *drawQueue) drawer(i int) drawFunc {
	waited := false
	return func(n int) []int {
		if !waited {
			q.mu.Lock()
			for q.next < i {
				q.cond.Wait()
			}
			q.mu.Unlock()
			waited = true
		}
		return q.g.integers(0, q.vocab, n)
	}
}

// finish records that prompt i will draw no more.
func (q *drawQueue) finish(i int) {
	q.mu.Lock()
	q.done[i] = true
	for q.next < len(q.done) && q.done[q.next] {
		q.next++
	}
	q.mu.Unlock()
	q.cond.Broadcast()
}
