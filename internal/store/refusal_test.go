package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/perf/benchfmt"
)

// TestLineRefusal reads the run markers of benchfmt lines as the gate,
// the exports and the store do.
func TestLineRefusal(t *testing.T) {
	const text = `target: sim
BenchmarkA 1 1 x
interrupted: false
BenchmarkA 1 1 x
interrupted: true
BenchmarkA 1 1 x
interrupted: false
invalid: p99_lateness_ms = 812.5, want <= 50
BenchmarkA 1 1 x
interrupted: yes
invalid:
BenchmarkA 1 1 x
`
	rd := benchfmt.NewReader(strings.NewReader(text), "markers")
	var got []string
	for rd.Scan() {
		if rec, ok := rd.Result().(*benchfmt.Result); ok {
			got = append(got, LineRefusal(rec))
		}
	}
	assert.NoError(t, rd.Err())
	assert.Equal(t, []string{
		"",
		"",
		"interrupted run: cut short before it sent its whole load",
		"invalid run: load generator fell behind: p99_lateness_ms = 812.5, want <= 50",
		"interrupted run: cut short before it sent its whole load",
	}, got)
}

// TestRefusal: an invalid run's reason wins over its interruption, and a
// valid run is not refused.
func TestRefusal(t *testing.T) {
	assert.Equal(t, "", Refusal(false, ""))
	assert.Equal(t, "invalid run: load generator fell behind: why", Refusal(true, "why"))
	assert.Equal(t, "interrupted run: cut short before it sent its whole load", Refusal(true, ""))
}
