package conversation

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/servegate/servegate/internal/dataset"
)

// A FieldError is a bad value in a Source. Field is the key's path below
// the source, for example "prompt_input.num_turns.min"; the scenario file
// prefixes it with the source's own path.
type FieldError struct {
	// Field is the key at fault.
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error formats the error as "field: message".
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Bad input files are reported as *dataset.FileError, the project's one
// "path:line: message" error, so that callers branch on a single type.
func fileErr(path string, line int, format string, args ...any) error {
	return &dataset.FileError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// lineOf returns the 1-based line of byte offset off in the file at path,
// counting newlines as it streams the file again: the files are read
// without being held whole, so a line is only computed for an error.
func lineOf(path string, off int64) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, max(off, 0)))
	line := 1
	for {
		b, err := r.ReadByte()
		if err != nil {
			return line
		}
		if b == '\n' {
			line++
		}
	}
}
