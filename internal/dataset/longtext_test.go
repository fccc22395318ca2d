package dataset

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servegate/servegate/fixtures"
	"github.com/servegate/servegate/internal/memtest"
	"github.com/servegate/servegate/internal/tokenizer"
)

// longText is about n bytes of varied text: English prose, numbers,
// punctuation, contractions, CJK, accents, emoji, runs of spaces and
// newlines, so that seams fall next to every kind of pre-token.
func longText(n int) string {
	parts := []string{
		"The quick brown fox doesn't jump; it's 12345 metres over the lazy dog. ",
		"Caf\u00e9 na\u00efve \u00fcber  \u0434\u0432\u0430 \u0441\u043b\u043e\u0432\u0430 ",
		"\u4f60\u597d\uff0c\u4e16\u754c\uff01 \u65e5\u672c\u8a9e\u306e\u6587 ",
		"emoji \U0001F600\U0001F680 and <|eot_id|> tags [INST] here\n\n",
		"\tindented    code(x, y) { return x+y; }\r\n",
		"A    B\n C",
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(parts[(i*7+i/3)%len(parts)])
		fmt.Fprintf(&b, "word%d ", i)
	}
	return b.String()
}

// TestEncodePiecesSameIDs: a long text encoded in pieces gives the ids of
// the text encoded whole, with every tokenizer at hand (byte-level BPE,
// WordPiece, SentencePiece-style), pieces of a few KiB so that hundreds of
// seams are checked.
func TestEncodePiecesSameIDs(t *testing.T) {
	defer func(n int) { pieceBytes = n }(pieceBytes)
	pieceBytes = 4 << 10
	dir, err := fixtures.TokenizersModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	text := longText(600 << 10)
	noSeam := strings.Repeat("x", 3*pieceBytes) + " tail"
	for _, tc := range []struct {
		name string
		cut  bool // false: the tokenizer truncates and pads, so every seam is refused and the text encoded whole
	}{{fixtures.Llama3, true}, {fixtures.BERT, true}, {"cohere-tokenizer.json", true}, {"sentence-transformers-labse.json", true}, {"all-minilm-l6-v2.json", false}} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			tok, err := tokenizer.FromFile(filepath.Join(dir, "test", "data", name))
			if err != nil {
				t.Fatal(err)
			}
			defer tok.Close()
			for _, c := range []struct{ name, text string }{{"varied", text}, {"no seam", noSeam}, {"NUL", text[:20<<10] + "\x00" + text[20<<10:40<<10]}} {
				whole := tok.Encode(strings.ReplaceAll(c.text, "\x00", ""), false)
				got := encodePieces(tok, strings.ReplaceAll(c.text, "\x00", ""))
				if !slices.Equal(got, whole) {
					t.Fatalf("%s: %d ids in pieces, %d whole; first difference at %d", c.name, len(got), len(whole), firstDiff(got, whole))
				}
				if n := CountText(tok, c.text); n != len(encodeText(tok, c.text)) {
					t.Fatalf("%s: CountText %d, EncodeText %d ids", c.name, n, len(encodeText(tok, c.text)))
				}
			}
			cuts := 0
			for rest := text; len(rest) > pieceBytes; {
				p := cutAt(tok, rest)
				if p <= 0 {
					break
				}
				cuts++
				rest = rest[p:]
			}
			if !tc.cut {
				if cuts != 0 {
					t.Errorf("the text was cut %d times, want none", cuts)
				}
				return
			}
			if cuts < len(text)/pieceBytes-1 {
				t.Errorf("the text was cut %d times, want about %d: seams are refused", cuts, len(text)/pieceBytes)
			}
		})
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestEncodeLongTextMemory: encoding a 4 MB text grows the process's peak
// resident memory by less than 16 bytes per byte of text. Encoded whole it
// took about 115 bytes per byte (460 MB here). Linux only: it resets the
// peak with /proc/self/clear_refs.
func TestEncodeLongTextMemory(t *testing.T) {
	tok := loadTokenizer(t, fixtures.Llama3)
	text := longText(4 << 20)
	tok.Encode("warm up", false)
	growth := memtest.PeakGrowth(t, func() { CountText(tok, text) })
	t.Logf("peak RSS grew by %d MB for a %d MB text", growth>>20, len(text)>>20)
	if limit := int64(16 * len(text)); growth > limit {
		t.Errorf("peak RSS grew by %d bytes (%.0f per byte of text), want under %d", growth, float64(growth)/float64(len(text)), limit)
	}
}
