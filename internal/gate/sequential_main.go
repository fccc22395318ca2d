package gate

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
)

// mainSequential is "gate -sequential BASE1 HEAD1 [BASE2 HEAD2 ...]":
// the detailed result files (--save-detailed JSON) of one scenario's
// paired runs, in the order the pairs ran, judged by the fast paired
// verdict (FastJudge with DefaultSequential: the TTFT and TPOT quantiles
// and goodput by the closed sequential design on block-bootstrapped
// pairs, fail-ratio by a sign test;
// docs/verdicts.md) on the steady-state window steady (0: every
// request). It stops at the first pair that decides; files after it are
// not read. Exit 0 no regression, 1 regression, 2 bad input, an invalid
// or interrupted run, a run too noisy to judge at the cap, or not
// decided yet with the pairs given (the message says which, and how
// many pairs more the cap allows). The bootstrap's
// generator is seeded constantly, so the same files give the same
// verdict. mdFile, when set, gets the verdict as Markdown.
func mainSequential(files []string, pol *Policy, steady float64, mdFile string, stdout io.Writer, fail func(error) int) int {
	s := DefaultSequential()
	if len(files) == 0 || len(files)%2 != 0 {
		return fail(fmt.Errorf("-sequential: want BASE HEAD result files of each pair, in pair order; got %d file(s)", len(files)))
	}
	if len(files)/2 > s.MaxPairs {
		return fail(fmt.Errorf("-sequential: %d pairs, more than the cap of %d", len(files)/2, s.MaxPairs))
	}
	j, err := NewFastJudge(s, pol, steady, 0, rand.New(rand.NewPCG(1, 27)))
	if err != nil {
		return fail(fmt.Errorf("-sequential: %w", err))
	}
	var lines []string
	for k := 1; 2*k <= len(files) && !j.Done(); k++ {
		bf, hf := files[2*k-2], files[2*k-1]
		base, err := os.ReadFile(bf)
		if err != nil {
			return fail(fmt.Errorf("-sequential: pair %d: %w", k, err))
		}
		head, err := os.ReadFile(hf)
		if err != nil {
			return fail(fmt.Errorf("-sequential: pair %d: %w", k, err))
		}
		run, err := PairRunFromResults(fmt.Sprintf("pair %d (%s, %s)", k, bf, hf), base, head)
		if err != nil {
			return fail(fmt.Errorf("-sequential: %w", err))
		}
		line, err := j.Add(run)
		if err != nil {
			return fail(fmt.Errorf("-sequential: pair %d (%s, %s): %w", k, bf, hf, err))
		}
		lines = append(lines, line)
	}
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	for _, l := range j.FigureLines() {
		fmt.Fprintln(stdout, l)
	}
	if j.Decision != Continue {
		fmt.Fprintf(stdout, "verdict: %s\n", j.Why)
	}
	if mdFile != "" {
		if err := os.WriteFile(mdFile, []byte(j.Markdown()), 0o644); err != nil {
			return fail(fmt.Errorf("-sequential: write the Markdown: %w", err))
		}
	}
	switch j.Decision {
	case NoRegression:
		return ExitPass
	case Regression:
		return ExitRegression
	case Undecided:
		return fail(fmt.Errorf("-sequential: %s", j.Why))
	}
	return fail(fmt.Errorf("-sequential: not decided yet: %s; run another pair (at most %d in all)", j.Why, s.MaxPairs))
}
