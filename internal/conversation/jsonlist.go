package conversation

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/servegate/servegate/internal/dataset"
)

// A jsonList streams the elements of a JSON file holding one list, one
// element at a time, so that a large file is never held whole. Errors name
// the file and line.
type jsonList struct {
	path string
	f    *os.File
	dec  *json.Decoder
	// n is the number of elements read.
	n int
	// size is the file's size in bytes.
	size int64
	// noun names one element in errors ("conversation", "entry").
	noun string
}

// openJSONList opens path, checks its size against MaxFileBytes and reads
// the opening bracket; what names the elements and noun one of them in
// errors.
func openJSONList(path, what, noun string) (*jsonList, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() > fileLimit {
		f.Close()
		return nil, fileErr(path, 0, "%d bytes is over the maximum %d", st.Size(), fileLimit)
	}
	if st.Size() == 0 {
		f.Close()
		return nil, fileErr(path, 0, "empty file; want a JSON list of %s", what)
	}
	l := &jsonList{path: path, f: f, dec: json.NewDecoder(bufio.NewReaderSize(f, 1<<16)), size: st.Size(), noun: noun}
	if t, err := l.dec.Token(); err != nil || t != json.Delim('[') {
		f.Close()
		if err != nil {
			return nil, l.syntaxErr(err, 0)
		}
		return nil, fileErr(path, lineOf(path, l.dec.InputOffset()-1), "want a JSON list of %s", what)
	}
	return l, nil
}

// Close closes the file.
func (l *jsonList) Close() error { return l.f.Close() }

// next returns the next element and its byte offset in the file; done at
// the closing bracket.
func (l *jsonList) next(ctx context.Context) (raw json.RawMessage, off int64, done bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, false, err
	}
	if !l.dec.More() {
		if _, err := l.dec.Token(); err != nil {
			return nil, 0, false, l.syntaxErr(err, l.dec.InputOffset())
		}
		if _, err := l.dec.Token(); err != io.EOF {
			return nil, 0, false, fileErr(l.path, lineOf(l.path, l.dec.InputOffset()), "unexpected data after the list")
		}
		return nil, 0, true, nil
	}
	if l.n == MaxConversations {
		return nil, 0, false, fileErr(l.path, lineOf(l.path, l.dec.InputOffset()), "more than %d entries", MaxConversations)
	}
	if err := l.dec.Decode(&raw); err != nil {
		return nil, 0, false, l.syntaxErr(err, l.dec.InputOffset())
	}
	l.n++
	off = l.dec.InputOffset() - int64(len(raw))
	if i, field := dataset.InvalidUTF8(raw); i >= 0 {
		return nil, 0, false, fileErr(l.path, lineOf(l.path, off+int64(i)), "%s %d: %s: byte 0x%02x is not UTF-8; vLLM reads the file as UTF-8 and refuses it",
			l.noun, l.n-1, field, raw[i])
	}
	return raw, off, false, nil
}

// syntaxErr reports a JSON error at its line.
func (l *jsonList) syntaxErr(err error, off int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fileErr(l.path, lineOf(l.path, se.Offset-1), "malformed JSON: %v", se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fileErr(l.path, lineOf(l.path, l.size-1), "malformed JSON: the file ends inside the list")
	}
	return fileErr(l.path, lineOf(l.path, off), "malformed JSON: %v", err)
}

// elementOffset returns the byte offset in raw (a JSON object) of element
// k of the list under key, or 0 when there is none; it is only called to
// report an error.
func elementOffset(raw []byte, key string, k int) int64 {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0
		}
		if t != key {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return 0
		}
		for i := 0; dec.More(); i++ {
			var el json.RawMessage
			if dec.Decode(&el) != nil {
				return 0
			}
			if i == k {
				return dec.InputOffset() - int64(len(el))
			}
		}
		return 0
	}
	return 0
}

// jsonString decodes raw as a JSON string; null and other types are not.
func jsonString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonKind names the JSON type of raw for errors.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return fmt.Sprintf("a number (%s)", raw)
}

// holdsObject reports whether the file at path starts, after white space,
// with a JSON object rather than a list.
func holdsObject(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		b, err := r.ReadByte()
		if err != nil {
			return false
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b == '{'
	}
}
