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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/servegate/servegate/benchtest/dataset"
	"github.com/servegate/servegate/tokenizer"
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
// seeded with the seed and the hash id; see blockTokens), and a line's
// user message is its blocks' ids decoded to text, which re-encodes to
// exactly those ids. Lines that share a leading run of hash ids therefore
// send the same tokens up to the end of that run, so the server can reuse
// that prefix's KV cache across requests as the trace records; a shared
// id after a differing one repeats the text but is not a prefix hit, as in
// Mooncake (a hash id there stands for the whole prefix up to its block).
// Should the text not re-encode to input_length tokens, it is fixed up at
// its end (vLLM's random-dataset fix-up), so UserTokens is input_length.
func readTrace(ctx context.Context, path string, block, maxRequests int, tok *tokenizer.Tokenizer, seed int64) ([]Conversation, error) {
	lines, err := scanTrace(ctx, path, block, maxRequests)
	if err != nil {
		return nil, err
	}
	allowed := blockTokens(tok)
	convs := make([]Conversation, len(lines))
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
				convs[k] = traceConversation(lines[k], block, tok, allowed, seed)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return convs, nil
}

// traceConversation builds one line's conversation.
func traceConversation(l traceLine, block int, tok *tokenizer.Tokenizer, allowed []int, seed int64) Conversation {
	ids := make([]int, 0, l.input)
	for _, h := range l.hashes {
		r := NewRand(uint64(seed), 1, uint64(h))
		for range min(block, l.input-len(ids)) {
			ids = append(ids, allowed[r.IntN(len(allowed))])
		}
	}
	fix := NewRand(uint64(seed), 2, uint64(l.line))
	more := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = allowed[fix.IntN(len(allowed))]
		}
		return out
	}
	text, final := dataset.DecodeToLength(tok, ids, l.input, more)
	return Conversation{
		ID:    "line-" + strconv.Itoa(l.line),
		At:    l.at,
		HasAt: true,
		Turns: []Turn{{User: text, UserTokens: len(final), MaxTokens: l.output}},
	}
}

// minWords is the fewest stable word tokens blockTokens accepts before it
// falls back to the whole vocabulary.
const minWords = 1000

var wordCache sync.Map // *tokenizer.Tokenizer -> []int

// blockTokens lists the token ids blocks are drawn from: words that
// tokenize back to themselves in any sequence of them: tokens that decode
// to a space and two or more lowercase ASCII letters and encode back to
// themselves alone (" the" for Llama-3), or, for a tokenizer whose decoding
// puts the spaces between words, such words without the space ("the" for
// BERT).
// A message of such tokens re-encodes to the same ids, so block k of a line
// is exactly its tokens [k*block, (k+1)*block) and lines that share hash
// ids share exactly those tokens. With fewer than minWords such tokens
// (an unusual tokenizer) it falls back to the base vocabulary without
// special tokens, whose text re-encodes to other counts (the fix-up then
// makes the total exact, not the blocks).
func blockTokens(tok *tokenizer.Tokenizer) []int {
	if ids, ok := wordCache.Load(tok); ok {
		return ids.([]int)
	}
	special := map[int]bool{}
	for _, id := range tok.SpecialIDs() {
		special[id] = true
	}
	var spaced, bare, all []int
	for id := range tok.BaseVocabSize() {
		if special[id] {
			continue
		}
		all = append(all, id)
		s := tok.Decode([]int{id}, false)
		if !isWord(strings.TrimPrefix(s, " ")) {
			continue
		}
		if enc := tok.Encode(s, false); len(enc) == 1 && enc[0] == id {
			if s[0] == ' ' {
				spaced = append(spaced, id)
			} else {
				bare = append(bare, id)
			}
		}
	}
	words := spaced
	switch {
	case len(spaced) >= minWords:
	case len(bare) >= minWords && tok.Decode(bare[:2], false) == tok.Decode(bare[:1], false)+" "+tok.Decode(bare[1:2], false):
		words = bare // decoding puts a space between words (WordPiece)
	default:
		words = all
	}
	wordCache.Store(tok, words)
	return words
}

// isWord reports whether s is two or more lowercase ASCII letters.
func isWord(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// scanTrace streams the trace's lines and checks each: its keys, its
// timestamp against the previous line's, its hash ids against its input
// length.
func scanTrace(ctx context.Context, path string, block, maxRequests int) ([]traceLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, min(64<<10, lineLimit)), lineLimit)
	var out []traceLine
	var first, prev float64
	prevLine, total, n := 0, 0, 0
	for (maxRequests == 0 || len(out) < maxRequests) && sc.Scan() {
		n++
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if len(out) == MaxConversations {
			return nil, fileErr(path, n, "more than %d requests", MaxConversations)
		}
		var rec struct {
			Timestamp    *float64 `json:"timestamp"`
			InputLength  *int     `json:"input_length"`
			OutputLength *int     `json:"output_length"`
			HashIDs      *[]int64 `json:"hash_ids"`
		}
		if err := json.Unmarshal(text, &rec); err != nil {
			return nil, fileErr(path, n, "%s", traceJSONMsg(err))
		}
		for _, k := range []struct {
			key string
			set bool
		}{{"timestamp", rec.Timestamp != nil}, {"input_length", rec.InputLength != nil}, {"output_length", rec.OutputLength != nil}, {"hash_ids", rec.HashIDs != nil}} {
			if !k.set {
				return nil, fileErr(path, n, "%s: missing", k.key)
			}
		}
		ts, in, outLen, hashes := *rec.Timestamp, *rec.InputLength, *rec.OutputLength, *rec.HashIDs
		switch {
		case !(ts >= 0) || ts > math.MaxInt64/1e6:
			return nil, fileErr(path, n, "timestamp: %v: want milliseconds from 0", ts)
		case len(out) > 0 && ts < prev:
			return nil, fileErr(path, n, "timestamp: %v is before line %d's %v; a trace runs forward in time", ts, prevLine, prev)
		case in < 1 || in > MaxTokens:
			return nil, fileErr(path, n, "input_length: %d: want 1 to %d", in, MaxTokens)
		case outLen < 1 || outLen > MaxTokens:
			return nil, fileErr(path, n, "output_length: %d: want 1 to %d", outLen, MaxTokens)
		}
		if need := (in + block - 1) / block; len(hashes) != need {
			if len(hashes) < need {
				return nil, fileErr(path, n, "hash_ids: %d blocks of %d tokens cover %d tokens, short of input_length %d (it needs %d blocks)", len(hashes), block, len(hashes)*block, in, need)
			}
			return nil, fileErr(path, n, "hash_ids: %d blocks, but input_length %d needs %d blocks of %d tokens; is block_size right?", len(hashes), in, need, block)
		}
		if total += in; total > totalLimit {
			return nil, fileErr(path, n, "the input lengths so far add up to over %d tokens; replay a window of the trace with max_requests", totalLimit)
		}
		if len(out) == 0 {
			first = ts
		}
		prev, prevLine = ts, n
		out = append(out, traceLine{line: n, at: time.Duration((ts - first) * float64(time.Millisecond)), input: in, output: outLen, hashes: hashes})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fileErr(path, n+1, "longer than %d bytes", lineLimit)
		}
		return nil, fmt.Errorf("read trace: %w", err)
	}
	if len(out) == 0 {
		return nil, fileErr(path, 0, "no requests")
	}
	return out, nil
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
