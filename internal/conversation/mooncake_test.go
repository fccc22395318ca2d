package conversation

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/dataset"
	"github.com/servegate/servegate/internal/tokenizer"
)

// commonTokens returns the length of the longest common prefix of a's and
// b's token ids.
func commonTokens(tb testing.TB, a, b string) int {
	tb.Helper()
	tok := loadLlama3(tb)
	x, y := tok.Encode(a, false), tok.Encode(b, false)
	n := 0
	for n < len(x) && n < len(y) && x[n] == y[n] {
		n++
	}
	return n
}

// TestTrace reads lines of a real FAST'25 trace: one single-turn
// conversation per line, exact input lengths, output lengths, start times.
func TestTrace(t *testing.T) {
	convs := mustLoad(t, Source{Kind: KindMooncake, Path: "mooncake_fast25_slice.jsonl"}, "testdata", 1)
	want := []struct {
		at          time.Duration
		input, outp int
	}{{0, 4182, 326}, {0, 895, 116}, {0, 1784, 466}, {0, 896, 291}, {3 * time.Second, 3786, 350}, {3 * time.Second, 1780, 514},
		{3 * time.Second, 894, 299}, {5999 * time.Millisecond, 1162, 259}, {5999 * time.Millisecond, 2701, 297}}
	if len(convs) != len(want) {
		t.Fatalf("%d conversations, want %d", len(convs), len(want))
	}
	checkCounts(t, convs)
	for i, c := range convs {
		w := want[i]
		if !c.HasAt || c.At != w.at || len(c.Turns) != 1 || c.Turns[0].UserTokens != w.input || c.Turns[0].MaxTokens != w.outp {
			t.Errorf("line %d: at %v (%v), %d turns, %+v; want at %v, %d tokens, max %d", i+1, c.At, c.HasAt, len(c.Turns), c.Turns[0].UserTokens, w.at, w.input, w.outp)
		}
	}
	// Every line starts with hash id 0 and differs from the second block on.
	for i := 1; i < len(convs); i++ {
		n := commonTokens(t, convs[0].Turns[0].User, convs[i].Turns[0].User)
		if n != 512 {
			t.Errorf("lines 1 and %d share %d tokens, want block 0's 512", i+1, n)
		}
	}
}

// TestTraceMaxRequests reads a window of a trace: reading stops after
// max_requests requests, so a bad line after them is not read.
func TestTraceMaxRequests(t *testing.T) {
	content := `{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [7]}` + "\n\n" +
		`{"timestamp": 9, "input_length": 600, "output_length": 2, "hash_ids": [7, 8]}` + "\n" + "not json\n"
	path := writeFile(t, "t.jsonl", content)
	convs := mustLoad(t, Source{Kind: KindMooncake, Path: path, MaxRequests: 2}, "", 0)
	if len(convs) != 2 || convs[1].At != 4*time.Millisecond || convs[1].Turns[0].UserTokens != 600 || convs[1].ID != "line-3" {
		t.Fatalf("got %+v", convs)
	}
	if _, err := Load(context.Background(), Source{Kind: KindMooncake, Path: path}, "", loadLlama3(t), 0); err == nil || !strings.Contains(err.Error(), ":4: malformed JSON") {
		t.Errorf("whole trace: %v", err)
	}
}

// TestTraceSharedPrefix checks that equal hash ids give identical text:
// the README's two requests share twelve blocks.
func TestTraceSharedPrefix(t *testing.T) {
	src := Source{Kind: KindMooncake, Path: "mooncake_readme.jsonl"}
	convs := mustLoad(t, src, "testdata", 9)
	checkCounts(t, convs)
	if convs[1].At != 3053*time.Millisecond || convs[0].At != 0 {
		t.Errorf("starts %v, %v; want 0, 3.053s (relative to the first line)", convs[0].At, convs[1].At)
	}
	if n := commonTokens(t, convs[0].Turns[0].User, convs[1].Turns[0].User); n != 12*512 {
		t.Errorf("the two requests share %d tokens, want exactly %d", n, 12*512)
	}
	again, other := mustLoad(t, src, "testdata", 9), mustLoad(t, src, "testdata", 10)
	if !reflect.DeepEqual(convs, again) {
		t.Error("the same seed gave different text")
	}
	if convs[0].Turns[0].User == other[0].Turns[0].User {
		t.Error("seeds 9 and 10 gave the same text")
	}
	// A smaller block size changes nothing but the block boundaries; here
	// it must be refused: 14 ids of 256 tokens cannot cover 6955 tokens.
	src.BlockSize = 256
	if _, err := Load(context.Background(), src, "testdata", loadLlama3(t), 9); err == nil || !strings.Contains(err.Error(), "short of input_length") {
		t.Errorf("block_size 256: %v", err)
	}
}

// TestTraceBadInput checks that each bad trace is one error naming the
// file, the line and the field.
func TestTraceBadInput(t *testing.T) {
	line := func(ts, in, out string, ids string) string {
		return `{"timestamp": ` + ts + `, "input_length": ` + in + `, "output_length": ` + out + `, "hash_ids": ` + ids + "}\n"
	}
	ok := line("0", "600", "5", "[0, 1]")
	tests := []struct {
		name, content string
		block         int
		line          int
		in            []string
	}{
		{"timestamps backwards", ok + line("3000", "600", "5", "[0, 2]") + "\n" + line("2999", "600", "5", "[0, 3]"), 0, 4, []string{"timestamp", "before line 2's 3000"}},
		{"hash ids short", ok + line("1", "1025", "5", "[0, 1]"), 0, 2, []string{"hash_ids", "short of input_length 1025", "needs 3 blocks"}},
		{"hash ids short, block 16", line("1", "40", "5", "[0, 1]"), 16, 1, []string{"hash_ids", "2 blocks of 16 tokens cover 32"}},
		{"too many hash ids", line("1", "100", "5", "[0, 1]"), 0, 1, []string{"hash_ids", "block_size"}},
		{"malformed", ok + `{"timestamp": 1, "input_length": 3` + "\n", 0, 2, []string{"malformed JSON"}},
		{"missing key", ok + `{"timestamp": 1, "input_length": 3, "hash_ids": [1]}` + "\n", 0, 2, []string{"output_length: missing"}},
		{"string length", ok + line("1", `"600"`, "5", "[0, 1]"), 0, 2, []string{"input_length: want an integer"}},
		{"fractional hash id", ok + line("1", "600", "5", "[0, 1.5]"), 0, 2, []string{"hash_ids: want a list of integers"}},
		{"zero output", line("1", "600", "0", "[0, 1]"), 0, 1, []string{"output_length: 0"}},
		{"huge input", line("1", "99999999", "1", "[0]"), 0, 1, []string{"input_length: 99999999"}},
		{"negative timestamp", line("-5", "600", "1", "[0, 1]"), 0, 1, []string{"timestamp"}},
		{"empty", "\n\n", 0, 0, []string{"no requests"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "trace.jsonl", tt.content)
			convs, err := Load(context.Background(), Source{Kind: KindMooncake, Path: path, BlockSize: tt.block}, "", loadLlama3(t), 0)
			var fe *dataset.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v (%d conversations), want a file error", err, len(convs))
			}
			if fe.Path != path || fe.Line != tt.line {
				t.Errorf("error at line %d, want %d: %v", fe.Line, tt.line, err)
			}
			for _, s := range tt.in {
				if !strings.Contains(fe.Msg, s) {
					t.Errorf("error %q does not say %q", fe.Msg, s)
				}
			}
		})
	}
}

// TestTraceOtherTokenizer builds trace text for BERT (WordPiece, words
// without a leading space): the counts are exact there too, and shared
// hash ids share their tokens.
func TestTraceOtherTokenizer(t *testing.T) {
	tok, err := tokenizer.Bundled(tokenizer.BERT)
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	if v := blockVocabOf(tok); !v.stable || len(v.ids) < minWords {
		t.Fatalf("BERT block vocabulary: %d words, stable %v", len(v.ids), v.stable)
	}
	convs, err := Load(context.Background(), Source{Kind: KindMooncake, Path: "mooncake_readme.jsonl"}, "testdata", tok, 3)
	if err != nil {
		t.Fatal(err)
	}
	a, b := tok.Encode(convs[0].Turns[0].User, false), tok.Encode(convs[1].Turns[0].User, false)
	if len(a) != 6955 || len(b) != 6472 || convs[0].Turns[0].UserTokens != 6955 {
		t.Fatalf("BERT counts %d and %d tokens, want 6955 and 6472", len(a), len(b))
	}
	n := 0
	for n < len(b) && a[n] == b[n] {
		n++
	}
	if n != 12*512 {
		t.Errorf("share %d tokens, want %d", n, 12*512)
	}
}

// TestTraceFarTimestamp: the largest timestamp the reader takes still
// gives a start time at or after the previous line's; a float that rounds
// to 2^63 nanoseconds must not wrap to a negative time.
func TestTraceFarTimestamp(t *testing.T) {
	content := `{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [7]}` + "\n" +
		`{"timestamp": 9223372036854.775, "input_length": 3, "output_length": 1, "hash_ids": [7]}` + "\n"
	path := writeFile(t, "far.jsonl", content)
	convs, err := Load(context.Background(), Source{Kind: KindMooncake, Path: path, BlockSize: 16}, "", loadLlama3(t), 1)
	if err != nil {
		var fe *dataset.FileError
		if !errors.As(err, &fe) || fe.Line != 2 || !strings.Contains(fe.Msg, "timestamp") {
			t.Fatalf("got %v, want an error on line 2's timestamp", err)
		}
		return
	}
	if convs[1].At < convs[0].At {
		t.Fatalf("line 2 starts at %v, before line 1's %v", convs[1].At, convs[0].At)
	}
}
