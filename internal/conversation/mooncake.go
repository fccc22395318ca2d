package conversation

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/servegate/servegate/internal/tokenizer"
)

// A traceLine is one request of a Mooncake trace, as read.
type traceLine struct {
	line   int
	at     time.Duration
	input  int
	output int
	hashes []int64
}

// readTrace reads a Mooncake-style trace (the FAST'25 release's format):
// JSON lines {"timestamp": ms, "input_length": tokens, "output_length":
// tokens, "hash_ids": [...]}, sorted by timestamp. Every line becomes a
// Conversation of one Turn that starts at its timestamp (relative to the
// first line's) and asks for output_length tokens. With maxRequests > 0,
// reading stops after that many requests.
//
// Hash ids stand for blocks of block tokens: hash_ids must have exactly
// ceil(input_length / block) entries, the last block being cut to what
// input_length leaves. A hash id's block is the same token ids wherever it
// appears (words drawn from the tokenizer's vocabulary by a generator
// seeded with the seed and the hash id; see blockVocabOf), and a line's
// user message is its blocks' words, a text that encodes to exactly those
// ids. Lines that share a leading run of hash ids therefore send the same
// tokens up to the end of that run, so the server can reuse that prefix's
// KV cache across requests as the trace records; a shared id after a
// differing one repeats the text but is not a prefix hit, as in Mooncake
// (a hash id there stands for the whole prefix up to its block). With a
// tokenizer whose words do not encode back to themselves (blockVocabOf's
// fallback), the blocks are decoded ids and the text is fixed up at its
// end to count input_length tokens (vLLM's random-dataset fix-up).
func readTrace(ctx context.Context, path string, block, maxRequests int, tok *tokenizer.Tokenizer, seed int64) ([]Conversation, error) {
	var convs []Conversation
	var vocab *blockVocab
	err := scanTrace(ctx, path, block, maxRequests, func(lines []traceLine) error {
		if vocab == nil {
			vocab = blockVocabOf(tok)
		}
		start := len(convs)
		convs = append(convs, make([]Conversation, len(lines))...)
		buildTrace(ctx, lines, convs[start:], block, tok, vocab, seed)
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return convs, nil
}

// buildTrace builds the conversations of lines into convs, in parallel.
func buildTrace(ctx context.Context, lines []traceLine, convs []Conversation, block int, tok *tokenizer.Tokenizer, vocab *blockVocab, seed int64) {
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(lines)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= len(lines) {
					return
				}
				convs[k] = traceConversation(lines[k], block, tok, vocab, seed)
			}
		}()
	}
	wg.Wait()
}

// A batch of trace lines is built once it holds batchTokens input tokens
// or batchLines lines. Its hash ids are dropped then: at block_size 1
// they take 8 bytes a token, as much as the text, and held for the whole
// trace they doubled the peak memory of a load.
const (
	batchTokens = 1 << 20
	batchLines  = 256
)

// maxTraceMs is the largest trace timestamp, in milliseconds (about 292
// years): one below the last whole millisecond a time.Duration holds, so
// that the float product in nanoseconds cannot round up to 2^63 and wrap
// to a negative start time.
const maxTraceMs = float64(math.MaxInt64/int64(time.Millisecond)) - 1

// scanTrace streams the trace's lines and checks each: its keys, its
// timestamp against the previous line's, its hash ids against its input
// length. It hands the lines to build in batches, in order.
func scanTrace(ctx context.Context, path string, block, maxRequests int, build func([]traceLine) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, min(64<<10, lineLimit)), lineLimit)
	var out []traceLine // the batch
	var first, prev float64
	prevLine, total, n, count, batch := 0, 0, 0, 0, 0
	flush := func() error {
		err := build(out)
		clear(out) // the hash ids
		out, batch = out[:0], 0
		return err
	}
	for (maxRequests == 0 || count < maxRequests) && sc.Scan() {
		n++
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if count == MaxConversations {
			return fileErr(path, n, "more than %d requests", MaxConversations)
		}
		var rec struct {
			Timestamp    *float64 `json:"timestamp"`
			InputLength  *int     `json:"input_length"`
			OutputLength *int     `json:"output_length"`
			HashIDs      *[]int64 `json:"hash_ids"`
		}
		if err := json.Unmarshal(text, &rec); err != nil {
			return fileErr(path, n, "%s", traceJSONMsg(err))
		}
		for _, k := range []struct {
			key string
			set bool
		}{{"timestamp", rec.Timestamp != nil}, {"input_length", rec.InputLength != nil}, {"output_length", rec.OutputLength != nil}, {"hash_ids", rec.HashIDs != nil}} {
			if !k.set {
				return fileErr(path, n, "%s: missing", k.key)
			}
		}
		ts, in, outLen, hashes := *rec.Timestamp, *rec.InputLength, *rec.OutputLength, *rec.HashIDs
		switch {
		case !(ts >= 0) || ts > maxTraceMs:
			return fileErr(path, n, "timestamp: %v: want milliseconds from 0", ts)
		case count > 0 && ts < prev:
			return fileErr(path, n, "timestamp: %v is before line %d's %v; a trace runs forward in time", ts, prevLine, prev)
		case in < 1 || in > MaxTokens:
			return fileErr(path, n, "input_length: %d: want 1 to %d", in, MaxTokens)
		case outLen < 1 || outLen > MaxTokens:
			return fileErr(path, n, "output_length: %d: want 1 to %d", outLen, MaxTokens)
		}
		if need := (in + block - 1) / block; len(hashes) != need {
			if len(hashes) < need {
				return fileErr(path, n, "hash_ids: %d blocks of %d tokens cover %d tokens, short of input_length %d (it needs %d blocks)", len(hashes), block, len(hashes)*block, in, need)
			}
			return fileErr(path, n, "hash_ids: %d blocks, but input_length %d needs %d blocks of %d tokens; is block_size right?", len(hashes), in, need, block)
		}
		if total += in; total > totalLimit {
			return fileErr(path, n, "the input lengths so far add up to over %d tokens; replay a window of the trace with max_requests", totalLimit)
		}
		if count == 0 {
			first = ts
		}
		prev, prevLine = ts, n
		out = append(out, traceLine{line: n, at: time.Duration((ts - first) * float64(time.Millisecond)), input: in, output: outLen, hashes: hashes})
		count++
		if batch += in; batch >= batchTokens || len(out) == batchLines {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fileErr(path, n+1, "longer than %d bytes", lineLimit)
		}
		return fmt.Errorf("read trace: %w", err)
	}
	if count == 0 {
		return fileErr(path, 0, "no requests")
	}
	if len(out) > 0 {
		return flush()
	}
	return nil
}

// traceJSONMsg says what is wrong with a trace line's JSON.
func traceJSONMsg(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := "a number"
		switch te.Field {
		case "hash_ids":
			want = "a list of integers"
		case "input_length", "output_length":
			want = "an integer"
		}
		if strings.HasPrefix(te.Field, "hash_ids") {
			te.Field, want = "hash_ids", "a list of integers"
		}
		return fmt.Sprintf("%s: want %s, got JSON %s", te.Field, want, te.Value)
	}
	return "malformed JSON: " + err.Error()
}
