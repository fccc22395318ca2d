package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// This file writes JSON the way Python's json.dump does with its defaults
// (", " and ": " separators, ASCII-only strings, float repr, NaN and
// Infinity allowed), so that a result file is byte-compatible with the one
// vllm bench serve writes.

// A Field is one key of an ordered JSON object, such as the keys a result
// file appends (RunInfo.Appendix). A []Field value is written as an object.
type Field struct {
	Key   string
	Value any
}

// object is a JSON object that keeps insertion order; set replaces the
// value of an existing key in place, like a Python dict.
type object []Field

func (o *object) set(key string, v any) {
	for i := range *o {
		if (*o)[i].Key == key {
			(*o)[i].Value = v
			return
		}
	}
	*o = append(*o, Field{key, v})
}

func (o *object) del(key string) {
	for i := range *o {
		if (*o)[i].Key == key {
			*o = append((*o)[:i], (*o)[i+1:]...)
			return
		}
	}
}

// PyFloat formats f as Python's repr(float) (and str(float)): what vLLM
// prints and writes for a float.
func PyFloat(f float64) string { return string(appendPyFloat(nil, f)) }

// appendPyFloat appends f as Python's repr(float): the shortest digits
// that round-trip, positional for decimal exponents from -4 to 16 and
// exponent notation (at least two exponent digits) outside them.
func appendPyFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	var ebuf [32]byte
	e := strconv.AppendFloat(ebuf[:0], f, 'e', -1, 64) // -d.ddde±XX
	if e[0] == '-' {
		b = append(b, '-')
		e = e[1:]
	}
	i := bytes.IndexByte(e, 'e')
	mant := e[:i]
	exp, _ := strconv.Atoi(string(e[i+1:]))
	var dbuf [24]byte
	digits := append(dbuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...) // the digits after the point
	}
	switch decpt := exp + 1; {
	case decpt <= -4 || decpt > 16:
		b = append(b, digits[0])
		if len(digits) > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e', '+')
		if exp < 0 {
			b[len(b)-1] = '-'
			exp = -exp
		}
		if exp < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendInt(b, int64(exp), 10)
	case decpt <= 0:
		b = append(b, "0."...)
		b = append(b, zeros(-decpt)...)
		b = append(b, digits...)
	case decpt >= len(digits):
		b = append(b, digits...)
		b = append(b, zeros(decpt-len(digits))...)
		b = append(b, ".0"...)
	default:
		b = append(b, digits[:decpt]...)
		b = append(b, '.')
		b = append(b, digits[decpt:]...)
	}
	return b
}

// zeros returns n '0' bytes (n is at most 16 here).
func zeros(n int) string { return "0000000000000000"[:n] }

// appendJSONFloat appends f as json.dump writes a float.
func appendJSONFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	}
	return appendPyFloat(b, f)
}

// writePyJSON appends the JSON form of v to b. It knows the value types
// the result files use.
func writePyJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return appendJSONFloat(b, x)
	case string:
		return appendPyString(b, x)
	case object:
		b = append(b, '{')
		for i, f := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPyString(b, f.Key)
			b = append(b, ": "...)
			b = writePyJSON(b, f.Value)
		}
		return append(b, '}')
	case []Field:
		return writePyJSON(b, object(x))
	case []any:
		return appendPyList(b, x, writePyJSON)
	case []int:
		return appendPyList(b, x, func(b []byte, e int) []byte { return strconv.AppendInt(b, int64(e), 10) })
	case []float64:
		return appendPyList(b, x, appendJSONFloat)
	case []string:
		return appendPyList(b, x, appendPyString)
	case [][]float64:
		return appendPyList(b, x, func(b []byte, e []float64) []byte { return appendPyList(b, e, appendJSONFloat) })
	case map[string]any:
		return writePyJSON(b, sortedObject(x))
	case map[string]string:
		return writePyJSON(b, sortedObject(x))
	default:
		return appendPyString(b, fmt.Sprint(x))
	}
}

// sortedObject is m as an object, keys in sorted order.
func sortedObject[V any](m map[string]V) object {
	o := make(object, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		o = append(o, Field{k, m[k]})
	}
	return o
}

const hexDigits = "0123456789abcdef"

// appendPyString appends s as a JSON string with json.dumps's default
// ensure_ascii escaping (non-ASCII as \uXXXX, astral planes as surrogate
// pairs).
func appendPyString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, `\"`...)
		case r == '\\':
			b = append(b, `\\`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\b':
			b = append(b, `\b`...)
		case r == '\f':
			b = append(b, `\f`...)
		case r < 0x20 || (r >= 0x7f && r < utf8.RuneSelf):
			b = appendU(b, r)
		case r < utf8.RuneSelf:
			b = append(b, byte(r))
		case r > 0xffff:
			r -= 0x10000
			b = appendU(b, 0xd800+(r>>10))
			b = appendU(b, 0xdc00+(r&0x3ff))
		default:
			b = appendU(b, r)
		}
	}
	return append(b, '"')
}

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// appendPyList appends xs as a JSON list with Python's ", " separator.
func appendPyList[T any](b []byte, xs []T, appendElem func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, e := range xs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendElem(b, e)
	}
	return append(b, ']')
}

// Python's json.dump writes non-finite floats as bare NaN, Infinity and
// -Infinity, which encoding/json refuses; a result file holds them in its
// header (burstiness inf, for one). The readers below accept them.

// nonFinite are Python's words for non-finite floats, longest first.
var nonFinite = []struct {
	word string
	f    float64
}{{"-Infinity", math.Inf(-1)}, {"Infinity", math.Inf(1)}, {"NaN", math.NaN()}}

// ReadablePyJSON returns data with every top-level value that is a bare
// NaN, Infinity or -Infinity replaced by null, so that encoding/json reads
// it, and the words replaced, by key. A non-finite value deeper in the file
// (inside an array or a nested object) is left for the decoder to refuse:
// no per-request number may silently become zero. Several objects one
// after another (an appended result file) are each read the same way.
func ReadablePyJSON(data []byte) ([]byte, map[string]string) {
	var out []byte // nil until the first replacement
	found := map[string]string{}
	depth, last, key := 0, 0, ""
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			start := i
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if depth == 1 {
				_ = json.Unmarshal(data[start:min(i+1, len(data))], &key)
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case 'N', 'I', '-':
			if depth != 1 {
				continue
			}
			for _, nf := range nonFinite {
				if bytes.HasPrefix(data[i:], []byte(nf.word)) {
					out = append(out, data[last:i]...)
					out = append(out, "null"...)
					found[key] = nf.word
					i += len(nf.word) - 1
					last = i + 1
					break
				}
			}
		}
	}
	if out == nil {
		return data, found
	}
	return append(out, data[last:]...), found
}

// UnmarshalFloat reads one JSON number into f, and also Python's NaN,
// Infinity and -Infinity.
func UnmarshalFloat(raw []byte, f *float64) error {
	for _, nf := range nonFinite {
		if string(bytes.TrimSpace(raw)) == nf.word {
			*f = nf.f
			return nil
		}
	}
	return json.Unmarshal(raw, f)
}
