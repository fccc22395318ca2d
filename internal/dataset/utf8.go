package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// InvalidUTF8 returns the offset of the first byte of the JSON value raw
// that is not valid UTF-8, or -1. It also names the field that holds the
// byte, as "id", "messages[2].content" or "a key in messages[2]".
// encoding/json turns such a byte into U+FFFD without a word. vLLM reads
// its files as UTF-8 and refuses them. Readers call InvalidUTF8 so that a
// prompt never changes silently.
func InvalidUTF8(raw []byte) (off int, field string) {
	if utf8.Valid(raw) {
		return -1, ""
	}
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n <= 1 {
			return i, jsonPathAt(raw, int64(i))
		}
		i += n
	}
	return -1, ""
}

// jsonPathAt names the field of the JSON value raw that holds byte offset
// off, as "messages[2].content", or "a key in messages[2]" when the byte is
// in a key; it is only called to report an error.
func jsonPathAt(raw []byte, off int64) string {
	type frame struct {
		key   string // an object's current key
		idx   int    // an array's current index; -1 in an object
		isKey bool   // in an object, the next token is a key
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.idx >= 0:
				fmt.Fprintf(&b, "[%d]", f.idx)
			case b.Len() > 0:
				b.WriteString("." + f.key)
			default:
				b.WriteString(f.key)
			}
		}
		if b.Len() == 0 {
			return "the value"
		}
		return b.String()
	}
	advance := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.idx >= 0 {
			top.idx++
		} else {
			top.isKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		t, err := dec.Token()
		if err != nil {
			return path()
		}
		end := dec.InputOffset()
		switch t {
		case json.Delim('{'):
			stack = append(stack, frame{idx: -1, isKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			advance()
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].isKey {
			if off < end {
				stack = stack[:n-1]
				return "a key in " + path()
			}
			stack[n-1].key, _ = t.(string)
			stack[n-1].isKey = false
			continue
		}
		if off < end {
			return path()
		}
		advance()
	}
}
