package compare

import "fmt"

// An InputError is why a comparison cannot run: bad input, or a side
// that does not build or start. Its exit status is 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }

func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}
