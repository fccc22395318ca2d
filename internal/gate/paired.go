package gate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/servegate/servegate/internal/stats"
)

// A PairedTest is the paired comparison of one gated row (Config.Paired,
// gate -paired): base and head runs matched by their pair: label, the
// two runs of a pair having been driven at the same time with the same
// arrival schedule (servegate compare), so that the machine's noise
// at that moment falls on both.
//
// For a relative tolerance the per-pair statistic is the ratio head/base
// and the test is Wilcoxon's signed-rank test on the log ratios; for an
// absolute tolerance (fail-ratio +0) it is the difference head - base.
// The row fails when the test is significant (p <= alpha, Holm-adjusted
// with -holm), the median ratio (or difference) moved the bad way, and
// by more than the tolerance.
type PairedTest struct {
	// Pairs is the number of matched pairs; NonZero how many of them
	// differ (the signed-rank test drops equal pairs).
	Pairs   int `json:"pairs"`
	NonZero int `json:"nonzero"`
	// V is the signed-rank statistic: the sum of the ranks of the pairs
	// in which head is higher.
	V float64 `json:"v"`
	// Labels are the pair labels in order; Diffs head - base of each.
	Labels []string  `json:"labels"`
	Diffs  []float64 `json:"diffs"`
	// MedianRatio is the median of Ratios, MedianDiff that of Diffs.
	MedianRatio float64 `json:"median_ratio"`
	MedianDiff  float64 `json:"median_diff"`
}

// pairUp matches a gated row's base and head values by pair label and
// runs the signed-rank test. It reports whether the row has a problem
// instead: a label twice on one side, a pair missing its partner, or a
// non-positive value where a ratio is needed.
func pairUp(cmp *Comparison, c *cell) bool {
	what := cmp.Benchmark + " " + cmp.Unit
	fail := func(group, msg string) bool {
		cmp.Verdict, cmp.Reason = Error, msg
		cmp.problem = &problem{group: group, what: what, msg: func(whats string) string { return msg + " (" + whats + ")" }}
		return true
	}
	base, err := byLabel(c.base, c.basePair)
	if err != "" {
		return fail("pairdup:base:"+err, "unpaired: base "+err)
	}
	head, err := byLabel(c.head, c.headPair)
	if err != "" {
		return fail("pairdup:head:"+err, "unpaired: head "+err)
	}
	var missBase, missHead []string
	for l := range base {
		if _, ok := head[l]; !ok {
			missHead = append(missHead, l)
		}
	}
	for l := range head {
		if _, ok := base[l]; !ok {
			missBase = append(missBase, l)
		}
	}
	if len(missHead)+len(missBase) > 0 {
		sortLabels(missHead)
		sortLabels(missBase)
		var parts []string
		if len(missHead) > 0 {
			parts = append(parts, fmt.Sprintf("pair %s in base has no head run", listOf(missHead)))
		}
		if len(missBase) > 0 {
			parts = append(parts, fmt.Sprintf("pair %s in head has no base run", listOf(missBase)))
		}
		msg := "missing partner: " + strings.Join(parts, "; ") + "; a paired comparison needs both runs of every pair"
		return fail("pairmiss:"+msg, msg)
	}
	labels := make([]string, 0, len(base))
	for l := range base {
		labels = append(labels, l)
	}
	sortLabels(labels)
	pt := &PairedTest{Pairs: len(labels), Labels: labels}
	logs := make([]float64, len(labels))
	for i, l := range labels {
		b, h := base[l], head[l]
		if cmp.Tolerance.Relative && (b < 0 || h < 0) {
			return fail("pairneg:"+cmp.Unit, fmt.Sprintf("pair %s: a negative value (base %v, head %v) has no ratio", l, b, h))
		}
		pt.Diffs = append(pt.Diffs, h-b)
		switch {
		case b == h:
			logs[i] = 0
		case b == 0:
			logs[i] = math.Inf(1)
		case h == 0:
			logs[i] = math.Inf(-1)
		default:
			logs[i] = math.Log(h / b)
		}
	}
	d := pt.Diffs
	if cmp.Tolerance.Relative {
		d = logs
	}
	var p float64
	pt.V, pt.NonZero, p = stats.SignedRank(d)
	pt.MedianDiff = stats.Median(pt.Diffs)
	pt.MedianRatio = math.Exp(stats.Median(logs))
	cmp.Paired = pt
	cmp.P, cmp.PAdjusted = p, p
	cmp.Delta = pt.MedianRatio - 1
	return false
}

// byLabel maps labels to values; it returns a description of the first
// label that appears more than once.
func byLabel(values []float64, labels []string) (map[string]float64, string) {
	m := make(map[string]float64, len(values))
	for i, v := range values {
		l := labels[i]
		if _, dup := m[l]; dup {
			return nil, fmt.Sprintf("has two runs labelled pair %s", l)
		}
		m[l] = v
	}
	return m, ""
}

// sortLabels sorts pair labels numerically when they are numbers.
func sortLabels(ls []string) {
	sort.Slice(ls, func(i, j int) bool {
		a, errA := strconv.Atoi(ls[i])
		b, errB := strconv.Atoi(ls[j])
		if errA == nil && errB == nil {
			return a < b
		}
		return ls[i] < ls[j]
	})
}
