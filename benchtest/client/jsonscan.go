package client

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner walks one JSON document.
type jsonScanner struct {
	b    []byte
	i    int
	kbuf []byte
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object reads an object, calling member for each key with the scanner at
// the value; member must consume the value.
func (s *jsonScanner) object(member func(key []byte) error) error {
	return s.list('{', '}', func() error {
		if s.peek() != '"' {
			return errSyntax
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		if s.peek() != ':' {
			return errSyntax
		}
		s.i++
		return member(key)
	})
}

// array reads an array, calling elem with the scanner at each element.
func (s *jsonScanner) array(elem func() error) error {
	return s.list('[', ']', elem)
}

// list reads the comma-separated items between open and end, the shared
// frame of objects and arrays; item must consume one item.
func (s *jsonScanner) list(open, end byte, item func() error) error {
	if s.peek() != open {
		return errSyntax
	}
	s.i++
	if s.peek() == end {
		s.i++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case end:
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// skip consumes one value of any type.
func (s *jsonScanner) skip() error {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == '"':
		return s.skipStr()
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
	return errSyntax
}

func (s *jsonScanner) lit(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return errSyntax
	}
	s.i += len(w)
	return nil
}

// int reads an integer (null reads as -1).
func (s *jsonScanner) int() (int, error) {
	if s.peek() == 'n' {
		return -1, s.lit("null")
	}
	st := s.i
	if err := s.skip(); err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(string(s.b[st:s.i]))
	if err != nil {
		f, ferr := strconv.ParseFloat(string(s.b[st:s.i]), 64)
		if ferr != nil {
			return 0, errSyntax
		}
		v = int(f)
	}
	return v, nil
}

// key reads a string at the scanner (an object key, or a short value to
// compare) in one pass: one without escapes is returned in place, an
// escaped one is decoded into a buffer the scanner owns.
func (s *jsonScanner) key() ([]byte, error) {
	st := s.i + 1
	for j := st; j < len(s.b); j++ {
		switch s.b[j] {
		case '"':
			s.i = j + 1
			return s.b[st:j], nil
		case '\\':
			var err error
			s.kbuf, err = s.str(s.kbuf[:0])
			return s.kbuf, err
		}
	}
	return nil, errSyntax
}

func (s *jsonScanner) skipStr() error {
	s.i++ // opening quote
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			return errSyntax
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

// str appends the decoded string at the scanner to dst.
func (s *jsonScanner) str(dst []byte) ([]byte, error) {
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
				return dst, errSyntax
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
			return dst, errSyntax
		}
	}
	return dst, errSyntax
}

func (s *jsonScanner) hex4() (rune, bool) {
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
