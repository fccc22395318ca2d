package gate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pairedRuns returns servegate result lines of scenario a, one per value
// of ttft, labelled pair 1, 2, ... unless labels says otherwise; fail is
// the fail-ratio of every run.
func pairedRuns(ttft []float64, labels []string) string {
	var b strings.Builder
	b.WriteString("target: sim\nUnit ttft-p99-sec better=lower\nUnit fail-ratio better=lower\n")
	for i, v := range ttft {
		label := fmt.Sprint(i + 1)
		if labels != nil {
			label = labels[i]
		}
		if label != "-" {
			fmt.Fprintf(&b, "pair: %s\n", label)
		}
		fmt.Fprintf(&b, "BenchmarkScenarios/scenario=a 1 %s ttft-p99-sec 0 fail-ratio\n", ftoa(v))
	}
	return b.String()
}

// machine is a per-pair machine factor that varies far more than 10%:
// a loaded runner.
var machine = []float64{1.0, 1.9, 1.2, 2.4, 0.9, 1.6, 1.1, 2.0, 1.4, 1.75}

func scaled(f func(i int) float64) []float64 {
	out := make([]float64, len(machine))
	for i, m := range machine {
		out[i] = 0.1 * m * f(i)
	}
	return out
}

// TestPairedDetectsThroughNoise: a head 20% slower in every pair (past
// the default p99 tolerance of 15%), on a
// machine whose speed varies by a factor 2.6 from pair to pair. The
// unpaired U test cannot see it; the paired test can (all ten ratios up:
// p = 2/2^10).
func TestPairedDetectsThroughNoise(t *testing.T) {
	dir := t.TempDir()
	base := writeText(t, dir, "base.txt", pairedRuns(scaled(func(int) float64 { return 1 }), nil))
	head := writeText(t, dir, "head.txt", pairedRuns(scaled(func(int) float64 { return 1.20 }), nil))

	code, stdout, _ := gateRun(t, base, head)
	assert.Equal(t, ExitPass, code, "unpaired, the noise hides the change:\n%s", stdout)

	code, stdout, stderr := gateRun(t, "-paired", base, head)
	assert.Equal(t, ExitRegression, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "regression: +20.00%")
	assert.Contains(t, stdout, "paired, 10 pairs, signed-rank p=0.002")

	// A/A: head within ±1% of base, either way.
	aa := writeText(t, dir, "aa.txt", pairedRuns(scaled(func(i int) float64 { return 1 + 0.01*float64(i%3-1) }), nil))
	code, stdout, stderr = gateRun(t, "-paired", base, aa)
	assert.Equal(t, ExitPass, code, "%s\n%s", stdout, stderr)

	// Significant but within the 5% tolerance.
	small := writeText(t, dir, "small.txt", pairedRuns(scaled(func(int) float64 { return 1.03 }), nil))
	code, stdout, _ = gateRun(t, "-paired", base, small)
	assert.Equal(t, ExitPass, code)
	assert.Contains(t, stdout, "within tolerance")
}

// TestPairedFailClosed: pairs that cannot be matched are exit 2, named.
func TestPairedFailClosed(t *testing.T) {
	dir := t.TempDir()
	ones := scaled(func(int) float64 { return 1 })
	base := writeText(t, dir, "base.txt", pairedRuns(ones, nil))
	for _, tc := range []struct {
		name   string
		head   string
		stderr []string
	}{
		{"missing partner", pairedRuns(ones[:9], nil), []string{"missing partner: pair 10 in base has no head run", "Scenarios/scenario=a ttft-p99-sec"}},
		{"extra pair", pairedRuns(ones, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "11"}),
			[]string{"pair 10 in base has no head run; pair 11 in head has no base run"}},
		{"duplicate label", pairedRuns(ones, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "9"}), []string{"head has two runs labelled pair 9"}},
		{"no pair key", "target: sim\nUnit ttft-p99-sec better=lower\nBenchmarkScenarios/scenario=a 1 0.1 ttft-p99-sec 0 fail-ratio\n",
			[]string{"unpaired: 1 result line(s) carry no pair: key", "head.txt:3: BenchmarkScenarios/scenario=a: no pair: key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := writeText(t, dir, "head.txt", tc.head)
			code, stdout, stderr := gateRun(t, "-paired", base, head)
			assert.Equal(t, ExitBadInput, code, "%s\n%s", stdout, stderr)
			for _, s := range tc.stderr {
				assert.Contains(t, stderr, s)
			}
		})
	}

	// Five pairs can never reach p <= 0.05 (2/2^5 = 0.0625).
	five := writeText(t, dir, "five.txt", pairedRuns(ones[:5], nil))
	fiveSlow := writeText(t, dir, "fiveslow.txt", pairedRuns(scaled(func(int) float64 { return 2 })[:5], nil))
	code, _, stderr := gateRun(t, "-paired", five, fiveSlow)
	assert.Equal(t, ExitBadInput, code)
	assert.Contains(t, stderr, "too few pairs: 5 pairs")
	assert.Contains(t, stderr, "run at least 6 pairs")
}

// TestPairKeyDoesNotSplit: the pair key never splits the grouping, so
// paired inputs also gate unpaired (one table, ten runs a side).
func TestPairKeyDoesNotSplit(t *testing.T) {
	dir := t.TempDir()
	ones := scaled(func(int) float64 { return 1 })
	base := writeText(t, dir, "base.txt", pairedRuns(ones, nil))
	rep, err := Run(t.Context(), Config{Base: []string{base}, Head: []string{base}})
	require.NoError(t, err)
	for _, c := range rep.Comparisons {
		assert.Equal(t, 10, c.Base.N, c.Unit)
		assert.Nil(t, c.Paired)
	}
	rep, err = Run(t.Context(), Config{Base: []string{base}, Head: []string{base}, Paired: true})
	require.NoError(t, err)
	var paired int
	for _, c := range rep.Comparisons {
		if c.Paired != nil {
			paired++
			assert.Equal(t, 10, c.Paired.Pairs)
			assert.Equal(t, 1.0, c.PAdjusted)
		}
	}
	assert.Equal(t, 2, paired, "ttft-p99-sec and fail-ratio are gated")
	assert.True(t, rep.Paired)
}
