// Package memtest measures a test's memory from /proc/self/status, so
// that a test can bound what one input costs. It skips where Linux's
// /proc is missing.
package memtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// PeakGrowth returns how much f raised the process's peak resident set
// size above its resident size before f, in bytes.
func PeakGrowth(tb testing.TB, f func()) int64 {
	tb.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak resident set size: %v", err)
	}
	before := procStatus(tb, "VmRSS:")
	f()
	return procStatus(tb, "VmHWM:") - before
}

// procStatus reads a kB field of /proc/self/status, in bytes.
func procStatus(tb testing.TB, field string) int64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}
