package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// lineIndex maps byte offsets in a file to 1-based line numbers.
type lineIndex struct {
	data   []byte
	starts []int
}

func newLineIndex(data []byte) lineIndex {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return lineIndex{data: data, starts: starts}
}

// at returns the line holding byte offset off.
func (l lineIndex) at(off int64) int {
	return sort.Search(len(l.starts), func(i int) bool { return int64(l.starts[i]) > off })
}

// skipSpace returns the offset of the next byte after off that is neither
// JSON whitespace nor a comma.
func (l lineIndex) skipSpace(off int64) int64 {
	for off < int64(len(l.data)) {
		switch l.data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// errLine returns the line of a JSON error in a value that starts at byte
// offset start: where the syntax error is, else the value's first line.
func (l lineIndex) errLine(start int64, err error) int {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return l.at(se.Offset - 1) // a Decoder counts from the start of its input
	}
	return l.at(start)
}

// jsonMsg turns a JSON decoding error into a short message that says what
// was wrong without the decoder's Go type names.
func jsonMsg(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "value"
		}
		return fmt.Sprintf("%s: want %s, got JSON %s", field, jsonType(te.Type.Kind().String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "malformed JSON: " + se.Error()
	}
	return err.Error()
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int64", "float64":
		return "a number"
	case "slice":
		return "a list"
	case "map", "struct":
		return "an object"
	}
	return kind
}
