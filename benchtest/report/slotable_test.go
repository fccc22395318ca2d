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
