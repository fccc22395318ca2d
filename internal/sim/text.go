package sim

import (
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// A Tokenizer is what the simulator needs of a tokenizer: prompt tokens (for
// usage and prefix caching) and the text of output tokens.
// *tokenizer.Tokenizer from servegate/tokenizer satisfies it.
type Tokenizer interface {
	Encode(text string, addSpecial bool) []int
	Decode(ids []int, skipSpecial bool) string
	VocabSize() int
}

// vocab is the set of token ids the simulator generates: ids whose text is a
// space and a short lowercase word that the tokenizer encodes back to that
// one id, so that any concatenation of them re-tokenizes to exactly as many
// tokens as were sent.
type vocab struct {
	ids   []int
	texts map[int]string
}

var wordRe = regexp.MustCompile(`^ [a-z]{3,9}$`)

// maxVocab bounds the scan of the tokenizer's vocabulary.
const maxVocab = 2048

// vocabs caches the scan per tokenizer.
var vocabs sync.Map

// newVocab scans a tokenizer for safe output tokens, once per tokenizer.
func newVocab(tk Tokenizer) *vocab {
	if v, ok := vocabs.Load(tk); ok {
		return v.(*vocab)
	}
	v := scanVocab(tk)
	vocabs.Store(tk, v)
	return v
}

func scanVocab(tk Tokenizer) *vocab {
	v := &vocab{texts: make(map[int]string)}
	n := tk.VocabSize()
	for id := 0; id < n && len(v.ids) < maxVocab; id++ {
		t := tk.Decode([]int{id}, true)
		if !strings.HasPrefix(t, " ") {
			t = " " + t
		}
		if !wordRe.MatchString(t) || offensive(t) {
			continue
		}
		if enc := tk.Encode(t, false); len(enc) != 1 || enc[0] != id {
			continue
		}
		v.ids = append(v.ids, id)
		v.texts[id] = t
	}
	return v
}

// blocked are word parts the simulator never generates, so that its
// output can appear in logs and reports without embarrassment. Innocent
// words containing them are dropped too; thousands remain.
var blocked = strings.Fields(`porn sex fuck shit nude naked rape nigg cum dick cock puss slut whore bitch
anal penis vagin boob tit xxx nazi kill erot fetish milf escort hentai damn hell bastard suck piss crap
drug cocaine weed gun murder suicide terror hate racis jew islam christ gay lesb trans`)

func offensive(word string) bool {
	for _, b := range blocked {
		if strings.Contains(word, b) {
			return true
		}
	}
	return false
}

// text returns the text of generated ids.
func (v *vocab) text(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(v.texts[id])
	}
	return b.String()
}

// A tokenStream draws a request's output ids from the vocabulary,
// deterministically from its seed.
type tokenStream struct {
	v   *vocab
	rng *rand.Rand
	// script, when set, is given out in order from the at-th token on (a
	// tool call after the reasoning); n counts the tokens given out.
	script []int
	at, n  int
	seed   uint64     // the choice's seed
	spec   *rand.Rand // draws draft acceptance, made on first use
}

func (v *vocab) stream(seed uint64) *tokenStream {
	return &tokenStream{v: v, rng: rand.New(rand.NewPCG(seed, 0x70c3e5)), seed: seed}
}

func (t *tokenStream) next() int {
	i := t.n - t.at
	t.n++
	if t.script != nil && i >= 0 && i < len(t.script) {
		return t.script[i]
	}
	return t.v.ids[t.rng.IntN(len(t.v.ids))]
}

// accept draws how many of k draft tokens are accepted: each with
// probability p once those before it were. The draws have their own seeded
// stream, so speculation does not change the text.
func (t *tokenStream) accept(k int, p float64) int {
	if t.spec == nil {
		t.spec = rand.New(rand.NewPCG(t.seed, 0x5bec))
	}
	a := 0
	for a < k && t.spec.Float64() < p {
		a++
	}
	return a
}

// seedOf mixes the server seed with a request's own seed or id.
func seedOf(serverSeed int64, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64() ^ uint64(serverSeed)*0x9e3779b97f4a7c15
}

// wordTokenizer is the fallback when no tokenizer file is given: a token is
// a run of letters or digits, or one other non-space character, and ids are
// hashes of the token text. Counts approximate a BPE tokenizer's only
// roughly, so clients that count tokens should be given the same rule or the
// server's usage; with a real tokenizer file there is no approximation.
type wordTokenizer struct{}

// wordList is the fallback output vocabulary: common English words.
var wordList = strings.Fields(`the of and to in is was for that with as on by he it at from his an were are
which this be or had not but first one their its new after who they have her she two been other when there all
during into school time may years more most only over city some world would where later up such used many can
state about national out known university united then made american however also under were film between year
born new people both part war called following well season three game team work since these being series early
through life including high music played area number best group final home back later second four like former
house several until while government south north west east river water album left until did each around there
name line public four main original member local death five long during life became member found played held
great side city power light point among small large night light field right place local water`)

func (wordTokenizer) split(text string) []string {
	var toks []string
	rs := []rune(text)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			toks = append(toks, string(rs[i:j]))
			i = j
		default:
			toks = append(toks, string(r))
			i++
		}
	}
	return toks
}

// wordIDBase keeps hashed ids clear of the word list's ids.
const wordIDBase = 1 << 16

func (w wordTokenizer) Encode(text string, addSpecial bool) []int {
	var ids []int
	for _, t := range w.split(text) {
		if i := slices.Index(wordList, strings.ToLower(t)); i >= 0 && t == wordList[i] {
			ids = append(ids, i)
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(t))
		ids = append(ids, wordIDBase+int(h.Sum32()%(1<<20)))
	}
	return ids
}

func (w wordTokenizer) Decode(ids []int, skipSpecial bool) string {
	var parts []string
	for _, id := range ids {
		if id >= 0 && id < len(wordList) {
			parts = append(parts, wordList[id])
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

func (w wordTokenizer) VocabSize() int { return len(wordList) }
