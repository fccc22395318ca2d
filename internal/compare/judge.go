package compare

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/servegate/servegate/internal/gate"
)

// A State is where a scenario's verdict stands.
type State int

const (
	// Continue asks for another pair.
	Continue State = iota
	// Pass: no regression (exit 0).
	Pass
	// Regression: a regression (exit 1).
	Regression
	// CannotJudge: no verdict can be reached (exit 2).
	CannotJudge
)

// String names the state as the reports write it.
func (s State) String() string {
	return [...]string{"not decided", "no regression", "regression", "cannot judge"}[s]
}

// A Verdict is a scenario's verdict after its pairs so far.
type Verdict struct {
	State State
	// Pairs is the number of pairs judged.
	Pairs int
	// Reason says in one line why the verdict stands where it does.
	Reason string
	// Text is the verdict's detail, a line per gated figure; Markdown
	// the same as a fragment for the job summary.
	Text, Markdown string
}

// A Judge decides one scenario from all its pairs so far, in the order
// they ran. An error is a pair it cannot read: exit 2.
type Judge interface {
	Judge(name string, pairs []*Record) (Verdict, error)
}

// A suiteJudge is told, before the first round, how many scenarios the
// comparison judges. It returns a note for the reports, "" for none.
type suiteJudge interface {
	judging(scenarios int) string
}

// fastJudge is internal/gate's fast paired verdict: the policy's TTFT
// and TPOT quantiles and goodput by a closed sequential test whose last
// look always decides, fail-ratio by a sign test. gate.Undecided, a run
// too noisy to judge at the cap, is CannotJudge (exit 2).
type fastJudge struct {
	policy *gate.Policy
	// scenarios is the number of scenarios the comparison judges. A
	// pull request fails when any one of them fails, so the design's
	// alpha is the comparison's and is split evenly between them
	// (Bonferroni): an A/A of 10 scenarios fails at most 1% of the
	// time, not up to 10%.
	scenarios int
}

// judging splits the design's alpha between the scenarios judged.
func (f *fastJudge) judging(scenarios int) string {
	f.scenarios = scenarios
	if scenarios <= 1 {
		return ""
	}
	return fmt.Sprintf("a no-change pull request fails at most %g of the time: the %d scenarios judged share it, %.2g each",
		gate.DefaultSequential().Alpha, scenarios, f.design().Alpha)
}

// design is the sequential design of one scenario's verdict.
func (f *fastJudge) design() gate.Sequential {
	d := gate.DefaultSequential()
	if f.scenarios > 1 {
		d.Alpha /= float64(f.scenarios)
	}
	return d
}

// newFastJudge loads the policy file ("" for the default policy).
func newFastJudge(policy string) (*fastJudge, error) {
	if policy == "" {
		return &fastJudge{policy: gate.DefaultPolicy()}, nil
	}
	p, err := gate.LoadPolicy(policy)
	if err != nil {
		return nil, inputErrorf("-policy: %v", err)
	}
	return &fastJudge{policy: p}, nil
}

func (f *fastJudge) Judge(name string, pairs []*Record) (Verdict, error) {
	// The bootstrap's generator is seeded constantly: the same pairs
	// give the same verdict.
	j, err := gate.NewFastJudge(f.design(), f.policy, 0, 0, rand.New(rand.NewPCG(1, 27)))
	if err != nil {
		return Verdict{}, err
	}
	var lines []string
	for i, r := range pairs {
		base, err := os.ReadFile(r.BasePath())
		if err != nil {
			return Verdict{}, err
		}
		head, err := os.ReadFile(r.HeadPath())
		if err != nil {
			return Verdict{}, err
		}
		run, err := gate.PairRunFromResults(fmt.Sprintf("%s, pair %d", name, i+1), base, head)
		if err != nil {
			return Verdict{}, err
		}
		line, err := j.Add(run)
		if err != nil {
			return Verdict{}, fmt.Errorf("%s, pair %d: %w", name, i+1, err)
		}
		lines = append(lines, line)
		if j.Done() {
			break
		}
	}
	v := Verdict{Pairs: j.Pairs, Reason: j.Why, Markdown: j.Markdown()}
	v.Text = strings.Join(append(lines, j.FigureLines()...), "\n")
	switch j.Decision {
	case gate.NoRegression:
		v.State = Pass
	case gate.Regression:
		v.State = Regression
	case gate.Undecided:
		v.State = CannotJudge
	}
	return v, nil
}
