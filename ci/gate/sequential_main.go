package gate

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
)

// sequentialUnit is the figure the sequential mode gates: p99 TTFT, its
// tolerance the policy's rule for this unit.
const sequentialUnit = "ttft-p99-sec"

// mainSequential is "gate -sequential BASE1 HEAD1 [BASE2 HEAD2 ...]":
// the detailed result files (--save-detailed JSON) of one scenario's
// paired runs, in the order the pairs ran, judged on p99 TTFT by the fast
// paired verdict (DefaultSequential; docs/verdicts.md). It stops at the
// first pair that decides; files after it are not read. Exit 0 no
// regression, 1 regression, 2 bad input, undecided at the cap, or not
// decided yet with the pairs given (the message says which, and how many
// pairs more the cap allows). The bootstrap's generator is seeded
// constantly, so the same files give the same verdict.
func mainSequential(files []string, pol *Policy, stdout io.Writer, fail func(error) int) int {
	s := DefaultSequential()
	if len(files) == 0 || len(files)%2 != 0 {
		return fail(fmt.Errorf("-sequential: want BASE HEAD result files of each pair, in pair order; got %d file(s)", len(files)))
	}
	if len(files)/2 > s.MaxPairs {
		return fail(fmt.Errorf("-sequential: %d pairs, more than the cap of %d", len(files)/2, s.MaxPairs))
	}
	rule, ok := pol.rule(sequentialUnit)
	if !ok || !rule.Tolerance.Relative {
		return fail(fmt.Errorf("-sequential: the policy has no relative tolerance for %s, the figure the sequential test gates", sequentialUnit))
	}
	rng := rand.New(rand.NewPCG(1, 27))
	var est []PairEstimate
	var l Look
	for k := 1; 2*k <= len(files); k++ {
		bf, hf := files[2*k-2], files[2*k-1]
		base, err := os.ReadFile(bf)
		if err != nil {
			return fail(fmt.Errorf("-sequential: pair %d: %w", k, err))
		}
		head, err := os.ReadFile(hf)
		if err != nil {
			return fail(fmt.Errorf("-sequential: pair %d: %w", k, err))
		}
		pairs, dropped, err := RequestPairsFromResults(fmt.Sprintf("pair %d (%s, %s)", k, bf, hf), base, head)
		if err != nil {
			return fail(fmt.Errorf("-sequential: %w", err))
		}
		e, err := BootstrapPair(pairs, 0.99, 0, 0, rng)
		if err != nil {
			return fail(fmt.Errorf("-sequential: pair %d (%s, %s): %w", k, bf, hf, err))
		}
		est = append(est, e)
		fmt.Fprintf(stdout, "pair %d: p99 TTFT %s (±%.1f%%), %d request pairs, %d left out (failed), block %d\n",
			k, pct(expm1(e.D)), 100*e.SE, e.Requests, dropped, e.Block)
		if l, err = s.Decide(est, rule.Tolerance.Amount, -1); err != nil {
			return fail(fmt.Errorf("-sequential: %w", err))
		}
		if l.Decision != Continue {
			break
		}
	}
	switch l.Decision {
	case NoRegression:
		fmt.Fprintf(stdout, "PASS %s: %d pairs used, stopped: %s\n", sequentialUnit, l.Pairs, l.Why)
		return ExitPass
	case Regression:
		fmt.Fprintf(stdout, "FAIL %s: %d pairs used, stopped: %s\n", sequentialUnit, l.Pairs, l.Why)
		return ExitRegression
	case Undecided:
		return fail(fmt.Errorf("-sequential: %s: %s", sequentialUnit, l.Why))
	}
	return fail(fmt.Errorf("-sequential: %s: not decided yet: %s; run another pair (at most %d in all)", sequentialUnit, l.Why, s.MaxPairs))
}

// expm1 is exp(x) - 1.
func expm1(x float64) float64 { return math.Expm1(x) }
