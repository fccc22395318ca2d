// Package comment puts servegate's verdict on a pull request. It keeps
// one comment per pull request, found again by a hidden marker and by its
// author, and updated in place on every push. It also prints the job's
// status line from the gate's exit code.
//
// Every name in the comment comes from a file a pull request can edit.
// The body renders each one as inert Markdown (see internal/mdsafe). The
// comment is updated only when the token's own identity wrote it, so
// nobody else's look-alike comment can be made to carry the verdict.
package comment

import (
	"fmt"
	"io"
)

// DefaultMarker is the hidden marker's id when none is given.
const DefaultMarker = "servegate-gate"

// A Verdict is what a gate exit code means, in the comment and in the
// job's annotation.
type Verdict struct {
	Icon, Title, Level, Text string
}

// verdicts by the gate's exit code.
var verdicts = map[int]Verdict{
	0: {"✅", "servegate: pass", "notice", "no gated unit regressed"},
	1: {"❌", "servegate: regression", "error", "a gated unit regressed beyond its tolerance"},
	2: {"⚠️", "servegate: cannot tell", "error", "the gate could not reach a verdict (bad input or too few runs); see the job log"},
}

// VerdictOf returns the verdict of an exit code. Any code but 0 and 1 is
// "cannot tell": the tool failed closed.
func VerdictOf(exit int) Verdict {
	if v, ok := verdicts[exit]; ok {
		return v
	}
	v := verdicts[2]
	v.Text = fmt.Sprintf("the gate exited %d: no verdict; see the job log", exit)
	return v
}

// Status prints the workflow annotation of the gate's exit code. It
// returns the code the job exits with: 0, 1, or 2 for anything else.
func Status(exit int, w io.Writer) int {
	v := VerdictOf(exit)
	fmt.Fprintf(w, "::%s title=%s::%s (gate exit %d)\n", v.Level, v.Title, v.Text, exit)
	if exit == 0 || exit == 1 {
		return exit
	}
	return 2
}

// Marker is the hidden HTML comment that finds the comment again.
func Marker(id string) string { return "<!-- " + id + " -->" }
