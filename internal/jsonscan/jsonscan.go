// Package jsonscan walks a JSON document in place, without decoding what
// its caller skips and without allocating: the SSE client parses every
// streamed chunk with it, and the tokenizer package reads tokenizer.json's
// metadata (counting a vocabulary of 128,256 entries instead of decoding
// it). A Scanner stops at the first error; what it returns is then
// meaningless.
package jsonscan

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is every error a Scanner returns.
var ErrSyntax = errors.New("invalid JSON")

// A Scanner walks one JSON document.
type Scanner struct {
	b    []byte
	i    int
	kbuf []byte
}

// New returns a Scanner over b that decodes escaped keys into scratch
// (reused from its start; Scratch returns it grown), so that parsing many
// documents allocates nothing.
func New(b, scratch []byte) Scanner { return Scanner{b: b, kbuf: scratch[:0]} }

// Scratch is the scratch buffer, grown, to hand to the next New.
func (s *Scanner) Scratch() []byte { return s.kbuf }

// Pos is the offset of the next byte to read.
func (s *Scanner) Pos() int { return s.i }

// AtEnd skips white space and reports whether the document is over.
func (s *Scanner) AtEnd() bool {
	s.ws()
	return s.i == len(s.b)
}

func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Peek skips white space and returns the next byte, 0 at the end.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Object reads an object, calling member for each key with the scanner at
// the value; member must consume the value.
func (s *Scanner) Object(member func(key []byte) error) error {
	return s.list('{', '}', func() error {
		if s.Peek() != '"' {
			return ErrSyntax
		}
		key, err := s.Key()
		if err != nil {
			return err
		}
		if s.Peek() != ':' {
			return ErrSyntax
		}
		s.i++
		return member(key)
	})
}

// Array reads an array, calling elem with the scanner at each element.
func (s *Scanner) Array(elem func() error) error {
	return s.list('[', ']', elem)
}

// list reads the comma-separated items between open and end, the shared
// frame of objects and arrays; item must consume one item.
func (s *Scanner) list(open, end byte, item func() error) error {
	if s.Peek() != open {
		return ErrSyntax
	}
	s.i++
	if s.Peek() == end {
		s.i++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.i++
		case end:
			s.i++
			return nil
		default:
			return ErrSyntax
		}
	}
}

// Skip consumes one value of any type.
func (s *Scanner) Skip() error {
	switch c := s.Peek(); {
	case c == '{':
		return s.Object(func([]byte) error { return s.Skip() })
	case c == '[':
		return s.Array(s.Skip)
	case c == '"':
		return s.SkipString()
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		s.i++
		for s.i < len(s.b) {
			switch d := s.b[s.i]; {
			case d >= '0' && d <= '9', d == '.', d == 'e', d == 'E', d == '+', d == '-':
				s.i++
			default:
				return nil
			}
		}
		return nil
	}
	return ErrSyntax
}

func (s *Scanner) lit(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return ErrSyntax
	}
	s.i += len(w)
	return nil
}

// Int reads an integer (null reads as -1).
func (s *Scanner) Int() (int, error) {
	if s.Peek() == 'n' {
		return -1, s.lit("null")
	}
	st := s.i
	if err := s.Skip(); err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(string(s.b[st:s.i]))
	if err != nil {
		f, ferr := strconv.ParseFloat(string(s.b[st:s.i]), 64)
		if ferr != nil {
			return 0, ErrSyntax
		}
		v = int(f)
	}
	return v, nil
}

// Key reads a string at the scanner (an object key, or a short value to
// compare) in one pass: one without escapes is returned in place, an
// escaped one is decoded into a buffer the scanner owns.
func (s *Scanner) Key() ([]byte, error) {
	st := s.i + 1
	for j := st; j < len(s.b); j++ {
		switch s.b[j] {
		case '"':
			s.i = j + 1
			return s.b[st:j], nil
		case '\\':
			var err error
			s.kbuf, err = s.AppendString(s.kbuf[:0])
			return s.kbuf, err
		}
	}
	return nil, ErrSyntax
}

// SkipString consumes the string at the scanner without decoding it.
func (s *Scanner) SkipString() error {
	s.i++ // opening quote
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			return ErrSyntax
		}
		q := s.i + j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		k := q
		for k > s.i && s.b[k-1] == '\\' {
			k--
		}
		s.i = q + 1
		if (q-k)%2 == 0 {
			return nil
		}
	}
}

// AppendString appends the decoded string at the scanner to dst.
func (s *Scanner) AppendString(dst []byte) ([]byte, error) {
	s.i++ // opening quote
	for s.i < len(s.b) {
		// Copy the run of plain bytes in one go.
		j := s.i
		for j < len(s.b) && s.b[j] != '"' && s.b[j] != '\\' {
			j++
		}
		dst = append(dst, s.b[s.i:j]...)
		s.i = j
		if j == len(s.b) {
			break
		}
		if s.b[j] == '"' {
			s.i++
			return dst, nil
		}
		if j+1 >= len(s.b) {
			break
		}
		esc := s.b[j+1]
		s.i = j + 2
		switch esc {
		case '"', '\\', '/':
			dst = append(dst, esc)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return dst, ErrSyntax
			}
			if utf16.IsSurrogate(r) {
				save := s.i
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					s.i += 2
					if r2, ok := s.hex4(); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							continue
						}
					}
				}
				s.i = save
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, ErrSyntax
		}
	}
	return dst, ErrSyntax
}

func (s *Scanner) hex4() (rune, bool) {
	if len(s.b)-s.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}
