package benchtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/pipeline"
)

func TestBenchName(t *testing.T) {
	procs := benchName("X")[1:]
	cases := map[string]string{
		"TestScenarios/scenario=chat":      "Scenarios/scenario=chat" + procs,
		"BenchmarkScenarios/scenario=chat": "Scenarios/scenario=chat" + procs,
		"TestX/a b":                        "X/a_b" + procs,
	}
	for in, want := range cases {
		assert.Equal(t, want, benchName(in), in)
	}
}

// recordTB records what a helper logs.
type recordTB struct {
	testing.TB
	logs []string
}

func (r *recordTB) Helper() {}
func (r *recordTB) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func TestLogTargetKeepsTheEnd(t *testing.T) {
	var lines []string
	for i := range 250 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	tgt := &pipeline.Target{Kind: "sim", BaseURL: "http://127.0.0.1:1"}
	rec := &recordTB{TB: t}
	logTail(rec, tgt, strings.Join(lines, "\n")+"\n")
	require.Len(t, rec.logs, 1)
	assert.True(t, strings.HasPrefix(rec.logs[0], "sim target log (http://127.0.0.1:1):\n[50 earlier lines]\nline 50\n"), rec.logs[0][:80])
	assert.True(t, strings.HasSuffix(rec.logs[0], "\nline 249"))

	rec = &recordTB{TB: t}
	logTarget(rec, &pipeline.Target{Kind: "url"})
	assert.Empty(t, rec.logs, "a target without logs logs nothing")
}
