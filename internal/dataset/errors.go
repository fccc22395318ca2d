package dataset

import "fmt"

// A FileError reports bad input in a dataset file: the file, the 1-based
// line (0 when the problem is the file as a whole) and what is wrong.
type FileError struct {
	// Path is the dataset file.
	Path string
	// Line is the 1-based line at fault, or 0 for the file as a whole.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error formats the error as "path:line: message".
func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

func fileErr(path string, line int, format string, args ...any) error {
	return &FileError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
}
