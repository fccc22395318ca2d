package sim

import (
	"sync"
	"time"
)

// A seq is one generation request inside the engine. The fields above mu
// belong to the engine goroutine; the ones below are shared with the HTTP
// handler that streams the output.
type seq struct {
	id        string
	promptLen int // len(prompt), kept after the engine drops the tokens
	prompt    []int
	output    []int
	maxTokens int    // output length at which the sequence stops
	stopAt    string // finish reason when it stops: "length" or "stop"
	gen       *tokenStream
	pooling   bool // prefill only (embeddings, rerank): done when the prompt is computed
	reasoning int  // how many of its first output tokens are reasoning
	toolCall  bool // it answers with a tool call

	numComputed int
	blocks      []int
	hashes      []uint64 // chained hashes of the full blocks of prompt+output
	committed   int      // blocks committed to the prefix cache
	queried     bool     // the prefix cache was asked on first admission

	arrival time.Time
	state   seqState
	// onFinish, when set, is called (on the engine goroutine) once the
	// sequence finishes, with the time: the virtual clock frees the
	// request's concurrency slot there.
	onFinish func(at time.Time)

	mu       sync.Mutex
	pending  []int // generated ids not yet taken by the handler
	notify   chan struct{}
	finished bool      // no more tokens will come
	finish   string    // finish reason once finished ("length", "stop", "abort")
	truth    truthData // ground truth, served at /debug/requests/{id}
}

type seqState int

const (
	seqWaiting seqState = iota
	seqRunning
	seqDone
)

func (s *seq) numTokens() int { return len(s.prompt) + len(s.output) }

// drop releases the token slices of a finished sequence (engine only), so
// that the ground truth of many requests stays small.
func (s *seq) drop() {
	s.prompt, s.output, s.hashes, s.blocks, s.gen = nil, nil, nil, nil, nil
}

// token returns the i-th token of prompt+output.
func (s *seq) token(i int) int {
	if i < len(s.prompt) {
		return s.prompt[i]
	}
	return s.output[i-len(s.prompt)]
}

// blockHashes extends and returns the hashes of the first n full blocks.
func (s *seq) blockHashes(n, bs int) []uint64 {
	for len(s.hashes) < n {
		b := len(s.hashes)
		var parent uint64
		if b > 0 {
			parent = s.hashes[b-1]
		}
		toks := make([]int, bs)
		for i := range toks {
			toks[i] = s.token(b*bs + i)
		}
		s.hashes = append(s.hashes, blockHash(parent, toks))
	}
	return s.hashes[:n]
}

// deliver hands generated tokens to the handler, called by the engine. A
// sequence with no handler (no notify channel: a replay in virtual time)
// keeps only their times.
func (s *seq) deliver(ids []int, at time.Time, finish string) {
	s.mu.Lock()
	if s.notify != nil {
		s.pending = append(s.pending, ids...)
	}
	for range ids {
		s.truth.TokenTimes = append(s.truth.TokenTimes, at.Sub(s.arrival))
	}
	if finish != "" {
		s.finished, s.finish = true, finish
		s.truth.Finished = at.Sub(s.arrival)
	}
	s.mu.Unlock()
	if finish != "" && s.onFinish != nil {
		s.onFinish(at)
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// take returns the tokens delivered since the last call and whether the
// sequence has finished (with its finish reason).
func (s *seq) take() (ids []int, finished bool, finish string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, s.pending = s.pending, nil
	return ids, s.finished, s.finish
}
