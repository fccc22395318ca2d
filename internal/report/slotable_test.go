package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
)

func verdicts() []scenario.Verdict {
	return []scenario.Verdict{
		{Bound: scenario.Bound{Metric: "p99_ttft_ms", Op: "<=", Value: 800}, Measured: 123.456789, Found: true, Pass: true},
		{Bound: scenario.Bound{Metric: "failed", Op: "==", Value: 0}, Measured: 2, Found: true},
		{Bound: scenario.Bound{Metric: "p95_itl_ms", Op: "<", Value: 5.5}},
	}
}

func TestWriteSLOTable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteSLOTable(&buf, verdicts()))
	golden(t, "slo_table.txt", buf.Bytes())
	buf.Reset()
	require.NoError(t, WriteSLOMarkdown(&buf, verdicts()))
	golden(t, "slo_table.md", buf.Bytes())
}

func TestSLOFailure(t *testing.T) {
	assert.Equal(t, "failed = 2, want == 0; p95_itl_ms was not measured, want < 5.5", SLOFailure(verdicts()))
	assert.Equal(t, "", SLOFailure(verdicts()[:1]))
}

// TestSLOTableInvalidRun: a broken harness limit reads INVALID and voids
// every SLO row, failed ones included; a kept limit reads PASS.
func TestSLOTableInvalidRun(t *testing.T) {
	vs := append([]scenario.Verdict{
		{Bound: scenario.Bound{Metric: "p99_lateness_ms", Op: "<=", Value: 50}, Measured: 812.5, Found: true, Harness: true},
		{Bound: scenario.Bound{Metric: "client_cpu_ratio", Op: "<=", Value: 0.9}, Measured: 0.01, Found: true, Pass: true, Harness: true},
	}, verdicts()...)
	var text, md bytes.Buffer
	require.NoError(t, WriteSLOTable(&text, vs))
	require.NoError(t, WriteSLOMarkdown(&md, vs))
	assert.Equal(t, `metric                      bound   measured  verdict
p99_lateness_ms (harness)   <= 50   812.5     INVALID
client_cpu_ratio (harness)  <= 0.9  0.01      PASS
p99_ttft_ms                 <= 800  123.457   VOID
failed                      == 0    2         VOID
p95_itl_ms                  < 5.5   -         VOID
`, text.String())
	assert.Contains(t, md.String(), "| `p99_lateness_ms` (harness) | <= 50 | 812.5 | INVALID |")
	assert.Contains(t, md.String(), "| `failed` | == 0 | 2 | VOID |")

	// Every limit kept: the SLOs are judged as usual.
	vs[0].Pass = true
	text.Reset()
	require.NoError(t, WriteSLOTable(&text, vs))
	assert.Contains(t, text.String(), "FAIL")
	assert.NotContains(t, text.String(), "VOID")
}
