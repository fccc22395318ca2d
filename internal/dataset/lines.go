package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// lineAt returns the 1-based line holding byte offset off of data. It is
// only called to report an error, so it counts rather than indexes.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// skipSpace returns the offset of the next byte after off that is neither
// JSON whitespace nor a comma.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
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
func errLine(data []byte, start int64, err error) int {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return lineAt(data, se.Offset-1) // a Decoder counts from the start of its input
	}
	return lineAt(data, start)
}

// jsonString decodes a JSON value that must be a string (not null, which
// encoding/json would accept as an empty string).
func jsonString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
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
