package sim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"unicode/utf8"
)

// Logprobs. vLLM returns, for every generated token, the sampled token's
// logprob and the k most likely tokens of that step; the simulator has no
// model, so it makes up a plausible, deterministic distribution per token:
//
//   - the top 20 ranks get probabilities p1 > p2 > … > p20 summing to less
//     than 1: p1 takes 30–97% of the mass, every later rank 15–75% of what
//     is left (at most 97% of the rank before). Every logprob is finite,
//     and the sampled token's lies in about [-1.2, -0.01] when it is the top
//     token;
//   - the sampled token's rank: the top one with greedy sampling
//     (temperature 0), otherwise drawn from those probabilities, as
//     sampling at temperature 1 would (rarely, a rank past the 20th, below
//     all of them);
//   - the tokens at the other ranks are distinct words of the simulator's
//     output vocabulary, never the sampled token;
//   - values are rounded to float32, as the model's are.
//
// Everything is drawn from a generator seeded by the choice's seed and the
// token's position, so a token's logprobs do not depend on how the tokens
// were split into chunks, nor on k (asking for more alternatives extends
// the list).

// maxLogprobs is vLLM's default --max-logprobs: the most alternatives a
// request may ask for per token.
const maxLogprobs = 20

// tokenLogprob is one token of a step's distribution.
type tokenLogprob struct {
	id int
	lp float64
}

// logprobSampler makes up the logprobs of one choice's tokens, in order.
type logprobSampler struct {
	v      *vocab
	seed   uint64
	greedy bool
	pos    int
	pcg    *rand.PCG
	rng    *rand.Rand
	probs  [maxLogprobs]float64
	top    []tokenLogprob
}

func newLogprobSampler(v *vocab, seed uint64, greedy bool) *logprobSampler {
	pcg := rand.NewPCG(0, 0)
	return &logprobSampler{v: v, seed: seed ^ 0x6c6f6770726f6273, greedy: greedy, pcg: pcg, rng: rand.New(pcg)}
}

// next returns the logprobs of the next token, id: the sampled token
// first, then the k most likely tokens in rank order without the sampled
// one, the way vLLM's per-token dict holds them (k+1 entries when the
// sampled token is not among the top k, else k). The slice is reused by the
// next call.
func (g *logprobSampler) next(id, k int) []tokenLogprob {
	g.pcg.Seed(g.seed, uint64(g.pos))
	g.pos++
	rem, prev := 1.0, 1.0
	for i := range g.probs {
		lo, span := 0.15, 0.6
		if i == 0 {
			lo, span = 0.3, 0.69
		}
		p := min(rem*(lo+span*g.rng.Float64()), prev*0.97)
		g.probs[i], rem, prev = p, rem-p, p
	}
	u, below := g.rng.Float64(), 0.1+0.8*g.rng.Float64()
	rank := 0
	if !g.greedy {
		rank = maxLogprobs // past the listed ranks
		for i, p := range g.probs {
			if u -= p; u < 0 {
				rank = i
				break
			}
		}
	}
	var lp float64
	if rank < maxLogprobs {
		lp = lp32(g.probs[rank])
	} else {
		lp = lp32(g.probs[maxLogprobs-1] * below)
	}
	g.top = append(g.top[:0], tokenLogprob{id, lp})
	for i := range min(k, maxLogprobs) {
		if i == rank {
			continue
		}
		alt, ok := g.alternative(id)
		if !ok {
			break
		}
		g.top = append(g.top, tokenLogprob{alt, lp32(g.probs[i])})
	}
	return g.top
}

// alternative draws a vocabulary word that is neither the sampled token nor
// already listed; false when the vocabulary has no more.
func (g *logprobSampler) alternative(sampled int) (int, bool) {
	ids := g.v.ids
	if len(g.top) >= len(ids) {
		return 0, false
	}
	for {
		alt := ids[g.rng.IntN(len(ids))]
		if alt == sampled {
			continue
		}
		dup := false
		for _, t := range g.top {
			if t.id == alt {
				dup = true
				break
			}
		}
		if !dup {
			return alt, true
		}
	}
}

// lp32 is ln(p) as the float32 a model computes, widened back.
func lp32(p float64) float64 { return float64(float32(math.Log(p))) }

// completionLogprobsOf builds a completion choice's logprobs for ids, the
// first of them at character offset offset of the choice's text; it
// returns the offset after them. k is the request's logprobs.
func (v *vocab) completionLogprobsOf(g *logprobSampler, ids []int, k, offset int) (*completionLogprobs, int) {
	out := &completionLogprobs{
		TextOffset:    make([]int, 0, len(ids)),
		TokenLogprobs: make([]pyFloat, 0, len(ids)),
		Tokens:        make([]string, 0, len(ids)),
		TopLogprobs:   make([]topLogprobs, 0, len(ids)),
	}
	for _, id := range ids {
		top := g.next(id, k)
		tok := v.texts[id]
		out.TextOffset = append(out.TextOffset, offset)
		// vLLM counts len() of the Python str: code points, not bytes.
		offset += utf8.RuneCountInString(tok)
		out.TokenLogprobs = append(out.TokenLogprobs, pyFloat(top[0].lp))
		out.Tokens = append(out.Tokens, tok)
		d := make(topLogprobs, len(top))
		for i, t := range top {
			d[i] = topLogprob{Token: v.texts[t.id], Logprob: pyFloat(t.lp)}
		}
		out.TopLogprobs = append(out.TopLogprobs, d)
	}
	return out, offset
}

// chatLogprobsOf builds a chat choice's logprobs for ids; k is the
// request's top_logprobs: the sampled token, then the most likely others,
// k entries in all (none for 0).
func (v *vocab) chatLogprobsOf(g *logprobSampler, ids []int, k int) *chatLogprobs {
	out := &chatLogprobs{Content: make([]chatLogprobsContent, 0, len(ids))}
	for _, id := range ids {
		top := g.next(id, k)
		tok := v.texts[id]
		c := chatLogprobsContent{Token: tok, Logprob: pyFloat(top[0].lp), Bytes: byteList(tok),
			TopLogprobs: make([]chatLogprob, 0, min(k, len(top)))}
		for _, t := range top[:min(k, len(top))] {
			s := v.texts[t.id]
			c.TopLogprobs = append(c.TopLogprobs, chatLogprob{Token: s, Logprob: pyFloat(t.lp), Bytes: byteList(s)})
		}
		out.Content = append(out.Content, c)
	}
	return out
}

// completionLogprobs is vLLM's CompletionLogProbs.
type completionLogprobs struct {
	TextOffset    []int         `json:"text_offset"`
	TokenLogprobs []pyFloat     `json:"token_logprobs"`
	Tokens        []string      `json:"tokens"`
	TopLogprobs   []topLogprobs `json:"top_logprobs"`
}

// topLogprobs is one token's {token: logprob} dict, in insertion order.
type topLogprobs []topLogprob

type topLogprob struct {
	Token   string
	Logprob pyFloat
}

func (d topLogprobs) MarshalJSON() ([]byte, error) { return d.append(nil), nil }

func (d topLogprobs) append(b []byte) []byte {
	b = append(b, '{')
	for i, t := range d {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, t.Token)
		b = append(b, ':')
		b = t.Logprob.append(b)
	}
	return append(b, '}')
}

// chatLogprobs is vLLM's ChatCompletionLogProbs.
type chatLogprobs struct {
	Content []chatLogprobsContent `json:"content"`
}

type chatLogprobsContent struct {
	Token       string        `json:"token"`
	Logprob     pyFloat       `json:"logprob"`
	Bytes       byteList      `json:"bytes"`
	TopLogprobs []chatLogprob `json:"top_logprobs"`
}

type chatLogprob struct {
	Token   string   `json:"token"`
	Logprob pyFloat  `json:"logprob"`
	Bytes   byteList `json:"bytes"`
}

// pyFloat is a float written as Python writes it (always with a fraction
// or an exponent: -9999.0, not -9999). Logprobs are never so close to zero
// that Python would switch to an exponent where Go does not.
type pyFloat float64

func (f pyFloat) append(b []byte) []byte {
	n := len(b)
	b = strconv.AppendFloat(b, float64(f), 'g', -1, 64)
	if math.Abs(float64(f)) >= 1e-4 && math.Abs(float64(f)) < 1e16 {
		b = strconv.AppendFloat(b[:n], float64(f), 'f', -1, 64)
	}
	for _, c := range b[n:] {
		if c == '.' || c == 'e' || c == 'n' || c == 'N' {
			return b
		}
	}
	return append(b, ".0"...)
}

func (f pyFloat) MarshalJSON() ([]byte, error) { return f.append(nil), nil }

// byteList is a token's UTF-8 bytes as a JSON list of numbers.
type byteList []byte

func (l byteList) MarshalJSON() ([]byte, error) { return l.append(make([]byte, 0, 2+4*len(l))), nil }

func (l byteList) append(b []byte) []byte {
	b = append(b, '[')
	for i, c := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(c), 10)
	}
	return append(b, ']')
}

// The stream encodes a chunk's logprobs with the appenders below rather
// than with reflection, which costs more than the rest of the chunk. They
// write exactly what marshal writes of the same value (a test holds them
// equal) for the values completionLogprobsOf and chatLogprobsOf build,
// whose slices are never nil.

func (l *completionLogprobs) append(b []byte) []byte {
	b = append(b, `{"text_offset":[`...)
	for i, o := range l.TextOffset {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(o), 10)
	}
	b = append(b, `],"token_logprobs":[`...)
	for i, f := range l.TokenLogprobs {
		if i > 0 {
			b = append(b, ',')
		}
		b = f.append(b)
	}
	b = append(b, `],"tokens":[`...)
	for i, t := range l.Tokens {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, t)
	}
	b = append(b, `],"top_logprobs":[`...)
	for i, d := range l.TopLogprobs {
		if i > 0 {
			b = append(b, ',')
		}
		b = d.append(b)
	}
	return append(b, "]}"...)
}

func (l *chatLogprobs) append(b []byte) []byte {
	b = append(b, `{"content":[`...)
	for i, c := range l.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = chatLogprob{c.Token, c.Logprob, c.Bytes}.appendFields(b)
		b = append(b, `,"top_logprobs":[`...)
		for k, t := range c.TopLogprobs {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(t.appendFields(b), '}')
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

// appendFields writes the object's opening brace and fields, leaving it
// open.
func (t chatLogprob) appendFields(b []byte) []byte {
	b = append(b, `{"token":`...)
	b = appendString(b, t.Token)
	b = append(b, `,"logprob":`...)
	b = t.Logprob.append(b)
	b = append(b, `,"bytes":`...)
	return t.Bytes.append(b)
}

// appendString appends s as marshal writes it: as is between quotes when
// it is printable ASCII with nothing to escape (every word of the output
// vocabulary), else through the encoder.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return append(b, marshal(s)...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
