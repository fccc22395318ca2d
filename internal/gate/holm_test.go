package gate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHolmChangesVerdict crafts a regression whose p-value (0.0175) passes
// alpha 0.05 alone but not after Holm–Bonferroni over six gated
// comparisons (two each of fail-ratio, ttft-p99-sec and goodput-req/s:
// 0.0175 * 6 = 0.105 > 0.05): the gate fails without -holm and passes
// with it.
func TestHolmChangesVerdict(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, ttft []float64) string {
		var b strings.Builder
		for i, v := range ttft {
			fmt.Fprintf(&b, "BenchmarkScenarios/scenario=a 1 %v ttft-p99-sec %v goodput-req/s 0 fail-ratio\n", v, 10+0.01*float64(i%3))
			fmt.Fprintf(&b, "BenchmarkScenarios/scenario=b 1 %v ttft-p99-sec %v goodput-req/s 0 fail-ratio\n", 0.2+0.001*float64(i%4), 10+0.01*float64(i%2))
		}
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644))
		return file
	}
	base := write("base.txt", []float64{0.100, 0.101, 0.102, 0.103, 0.105, 0.107, 0.112})
	head := write("head.txt", []float64{0.104, 0.106, 0.111, 0.113, 0.114, 0.115, 0.116})

	pol := p99Policy5(t)
	var stdout, stderr bytes.Buffer
	assert.Equal(t, ExitRegression, Main(context.Background(), []string{"-policy", pol, base, head}, &stdout, &stderr), stdout.String()+stderr.String())
	assert.Contains(t, stdout.String(), "FAIL: regression: +9.71%, beyond tolerance +5% (p=0.017)")
	stdout.Reset()
	assert.Equal(t, ExitPass, Main(context.Background(), []string{"-policy", pol, "-holm", base, head}, &stdout, &stderr), stdout.String()+stderr.String())
	assert.Contains(t, stdout.String(), "+9.71% (p=0.017 n=7)  PASS: no significant change (Holm-adjusted p=0.105 > α=0.05)")
}

// p99Policy5 writes the default policy with ttft-p99-sec at 5%, the
// default before the medians were gated, for the tests whose crafted
// inputs report p99 TTFT alone, and returns its path.
func p99Policy5(tb testing.TB) string {
	tb.Helper()
	yaml := strings.Replace(DefaultPolicyYAML, "ttft-p99-sec: 15%", "ttft-p99-sec: 5% ", 1)
	require.NotEqual(tb, DefaultPolicyYAML, yaml)
	file := filepath.Join(tb.TempDir(), "policy.yaml")
	require.NoError(tb, os.WriteFile(file, []byte(yaml), 0o644))
	return file
}
