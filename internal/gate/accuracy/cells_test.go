package accuracy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/internal/gate"
)

// The environment of TestAccuracyVerdict: trials per head (unset:
// skipped), the heads to run, a budget in minutes after which no trial
// starts, and the burner.
const (
	envVerdictTrials  = "SERVEGATE_ACCURACY_VERDICT"
	envVerdictHeads   = "SERVEGATE_ACCURACY_HEADS"
	envVerdictMinutes = "SERVEGATE_ACCURACY_MINUTES"
	envVerdictBurner  = "SERVEGATE_ACCURACY_BURNER"
	envVerdictTail    = "SERVEGATE_ACCURACY_TAIL"
)

// A verdictHead is one head of TestAccuracyVerdict: a simulator server
// whose knobs carry the change, judged against base (knobs unchanged).
type verdictHead struct {
	Key, Name string
	Server    simServer
}

// tailStallRate and tailStallMS are the tail head's change: 3% of the
// requests get their first token 85 ms late. At the cell's load (TTFT
// p50 about 30 ms, p99 about 125 ms) that lifted the p99 by 26% and left
// the median where it was (5 trials); 1.5% of 105 ms, the earlier head,
// moved the p99 only in the runs that happened to draw five stalls or
// more, about 70% of them, and 3% of 130 ms lifted it by 62%. The table
// reports what each run measured.
const (
	tailStallRate = 0.03
	tailStallMS   = 85
)

// verdictHeads are the heads of the table. The goodput row rides
// on the A/A pairs: head's goodput weights times 0.95, injected in the
// unit, as the earlier harness did.
var verdictHeads = []verdictHead{
	{"aa", "A/A", simServer{slowdown: 1, instance: 1}},
	{"step5", "engine step +5% (slowdown 1.05)", simServer{slowdown: 1.05}},
	{"step8", "engine step +8% (slowdown 1.08)", simServer{slowdown: 1.08}},
	{"decode8", "decode steps +8% (decode_slowdown 1.08)", simServer{slowdown: 1, decode: 1.08}},
	{"tail", fmt.Sprintf("tail: %.1f%% of first tokens +%d ms", 100*tailStallRate, tailStallMS), simServer{slowdown: 1, stallRate: tailStallRate, stallMS: tailStallMS}},
}

// verdictFigures are the figures whose measured change the table shows.
var verdictFigures = []string{"ttft-p50-sec", "tpot-p50-sec", "ttft-p99-sec", "goodput-req/s"}

// A verdictTally sums one row's verdicts.
type verdictTally struct {
	Name                  string
	Fail, Pass, Undecided int
	Units                 map[string]int // regressions by deciding figure
	Pairs                 []int
	Walls                 []time.Duration
	sumD                  map[string]float64 // log ratio head/base, summed over the pairs read
	nD                    map[string]int
	// Last counts, for the verdicts that went past the first look, the
	// figures that took the most pairs: what held the verdict open.
	Last map[string]int
}

func (v *verdictTally) add(j *gate.FastJudge, wall time.Duration) {
	switch j.Decision {
	case gate.Regression:
		v.Fail++
		if v.Units == nil {
			v.Units = map[string]int{}
		}
		v.Units[j.Unit]++
	case gate.NoRegression:
		v.Pass++
	default:
		v.Undecided++
	}
	v.Pairs = append(v.Pairs, j.Pairs)
	v.Walls = append(v.Walls, wall)
	if v.sumD == nil {
		v.sumD, v.nD = map[string]float64{}, map[string]int{}
	}
	most := 0
	for _, f := range j.Figures() {
		most = max(most, len(f.Estimates))
		for _, e := range f.Estimates {
			v.sumD[f.Unit] += e.D
			v.nD[f.Unit]++
		}
	}
	if most > gate.DefaultSequential().MinPairs {
		if v.Last == nil {
			v.Last = map[string]int{}
		}
		for _, f := range j.Figures() {
			if len(f.Estimates) == most {
				v.Last[f.Unit]++
			}
		}
	}
}

// row formats the tally as a row of the table.
func (v *verdictTally) row(machine string) string {
	n := len(v.Pairs)
	if n == 0 {
		return fmt.Sprintf("| %s | %s | no trial |", machine, v.Name)
	}
	ps := slices.Clone(v.Pairs)
	slices.Sort(ps)
	ws := slices.Clone(v.Walls)
	slices.Sort(ws)
	sum := 0
	for _, p := range ps {
		sum += p
	}
	var moved []string
	for _, u := range verdictFigures {
		if v.nD[u] == 0 {
			moved = append(moved, "-")
			continue
		}
		moved = append(moved, fmt.Sprintf("%+.1f%%", 100*math.Expm1(v.sumD[u]/float64(v.nD[u]))))
	}
	units := ""
	if len(v.Units) > 0 {
		units = fmt.Sprintf(" %v", v.Units)
	}
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	held := "-"
	if len(v.Last) > 0 {
		held = fmt.Sprint(v.Last)
	}
	return fmt.Sprintf("| %s | %s | %d%s | %d | %d | %d | %d / %.2f / %d | %v / %v / %v | %s | %s |",
		machine, v.Name, v.Fail, units, v.Pass, v.Undecided, n, ps[0], float64(sum)/float64(n), ps[n-1],
		r(ws[0]), r(ws[n/2]), r(ws[n-1]), strings.Join(moved, " / "), held)
}

// verdictHeader is the table's header.
const verdictHeader = "| machine | head | fail (exit 1) | pass | cannot judge (exit 2) | trials | pairs min / mean / max | wall per verdict min / median / max | measured change p50 TTFT / p50 TPOT / p99 TTFT / goodput | held past pair 3 by |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"

// aaInjected are the rows that ride on the A/A pairs, each change
// injected in the unit it gates: head's goodput weights times 0.95, and
// head's TPOT times 1.08 (decode alone slower, TTFT unchanged).
var aaInjected = []struct {
	Name string
	C    seqCondition
}{
	{"goodput -5% (A/A pairs, head's goodput weights × 0.95)", seqCondition{TTFT: 1, Goodput: 0.95}},
	{"decode only +8% (A/A pairs, head's TPOT × 1.08)", seqCondition{TTFT: 1, Goodput: 1, TPOT: 1.08}},
}

// verdictTrial runs the fast verdict (default policy and design) on
// pairs of base and head from next until every judge decided: one judge
// of the pairs as they are and one of each of conds applied to them
// (the same pairs). Each judge's wall time is the pairs' it read plus
// its statistics'.
func verdictTrial(tb testing.TB, next func() (seqPair, error), conds []seqCondition, rng *rand.Rand) (judges []*gate.FastJudge, walls []time.Duration) {
	tb.Helper()
	n := 1 + len(conds)
	walls = make([]time.Duration, n)
	for range n {
		j, err := gate.NewFastJudge(gate.DefaultSequential(), gate.DefaultPolicy(), 0, 0, rng)
		require.NoError(tb, err)
		judges = append(judges, j)
	}
	for k := 1; k <= gate.DefaultSequential().MaxPairs; k++ {
		open := false
		for _, j := range judges {
			open = open || !j.Done()
		}
		if !open {
			break
		}
		p, err := next()
		require.NoError(tb, err, "pair %d", k)
		for i, j := range judges {
			if j.Done() {
				continue
			}
			run := p.Run
			if i > 0 {
				run = conds[i-1].inject(run)
			}
			start := time.Now()
			_, err := j.Add(run)
			require.NoError(tb, err, "pair %d", k)
			walls[i] += p.Wall + time.Since(start)
		}
	}
	return judges, walls
}

// TestAccuracyVerdict measures the fast paired verdict, as
// servegate compare runs it by default (default policy and design), on
// the in-process simulator: per trial and head, pairs of base and head
// (two in-process simulators driven at the same time with one schedule:
// seqCellRequests chat requests at seqCellRate req/s, goodput SLO
// seqSimSLO ms on TTFT, about 5 s a pair) until the verdict ends. The
// heads change the unit each figure gates, in the simulator's profile
// (verdictHeads): none (A/A), every engine step +5% and +8%, pure decode
// steps +8%, the first token of a few requests late (the tail); and
// goodput -5% and decode alone +8%, injected in head's goodput weights
// and TPOT of the A/A pairs (aaInjected). A
// trial runs one verdict of each head in turn, so that the machine's
// drift falls on all alike. Per head it prints the verdicts, the pairs
// and wall time per verdict, and the change each figure measured (the
// mean log ratio over the pairs its test read). It asserts nothing
// about the rates, which the machine decides: it fails only when a run
// or a verdict errs.
//
// SERVEGATE_ACCURACY_VERDICT=<trials per head> runs it;
// SERVEGATE_ACCURACY_HEADS=aa,step5,step8,decode8,tail picks heads
// (default all; "aa" carries the goodput row);
// SERVEGATE_ACCURACY_MINUTES=<m> starts no trial after m minutes, so
// that a run fits a hold of the machine lock;
// SERVEGATE_ACCURACY_BURNER=1 runs beside the burner (TestNeighbour);
// SERVEGATE_ACCURACY_TAIL=<rate>,<ms> sets the tail head's change;
// SERVEGATE_ACCURACY_CONTAINER=1 runs every server as a simulator
// container (needs Docker), the image a scenario's sim target runs.
// Quiet: under flock -x /work/plan/machine.lock, and trials never run in
// parallel.
func TestAccuracyVerdict(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envVerdictTrials))
	if n < 1 {
		t.Skipf("set %s=<trials per head> to run", envVerdictTrials)
	}
	heads := slices.Clone(verdictHeads)
	if v := os.Getenv(envVerdictHeads); v != "" {
		heads = nil
		for _, k := range strings.Split(v, ",") {
			i := slices.IndexFunc(verdictHeads, func(h verdictHead) bool { return h.Key == k })
			require.GreaterOrEqual(t, i, 0, "%s: unknown head %q", envVerdictHeads, k)
			heads = append(heads, verdictHeads[i])
		}
	}
	budget := time.Duration(math.MaxInt64)
	if v := os.Getenv(envVerdictMinutes); v != "" {
		m, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, envVerdictMinutes)
		require.Positive(t, m, envVerdictMinutes)
		budget = time.Duration(m * float64(time.Minute))
	}
	if v := os.Getenv(envVerdictTail); v != "" {
		var rate, ms float64
		_, err := fmt.Sscanf(v, "%g,%g", &rate, &ms)
		require.NoError(t, err, "%s=%q: want rate,ms", envVerdictTail, v)
		for i := range heads {
			if heads[i].Key == "tail" {
				heads[i].Server.stallRate, heads[i].Server.stallMS = rate, ms
				heads[i].Name = fmt.Sprintf("tail: %.1f%% of first tokens +%g ms", 100*rate, ms)
			}
		}
	}
	machine := "quiet"
	if os.Getenv(envVerdictBurner) == "1" {
		startNeighbour(t)
		machine = "beside a burner"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
	defer cancel()
	sr := newSimRunner(t)
	if os.Getenv(envVerdictContainer) == "1" {
		sr.start = containerStarter(t, ctx)
		machine += ", containers"
	}
	nexts := make([]func() (seqPair, error), len(heads))
	var tallies []*verdictTally
	for i, h := range heads {
		nexts[i] = headPairSource(ctx, t, sr, h.Server, seqCellRequests, seqCellRate, 0)
		_, err := nexts[i]() // warm both servers and the connections
		require.NoError(t, err, h.Name)
		tallies = append(tallies, &verdictTally{Name: h.Name})
		if h.Key == "aa" {
			for _, c := range aaInjected {
				tallies = append(tallies, &verdictTally{Name: c.Name})
			}
		}
	}
	rng := rand.New(rand.NewPCG(37, 11))
	load0 := LoadAverage()
	start := time.Now()
	table := func() string {
		rows := []string{verdictHeader}
		for _, v := range tallies {
			rows = append(rows, v.row(machine))
		}
		return strings.Join(rows, "\n")
	}
	done := 0
	for k := range n {
		if time.Since(start) > budget {
			t.Logf("budget of %v spent: %d of %d trials run", budget, k, n)
			break
		}
		ti := 0
		for i, h := range heads {
			var conds []seqCondition
			if h.Key == "aa" {
				for _, c := range aaInjected {
					conds = append(conds, c.C)
				}
			}
			judges, walls := verdictTrial(t, nexts[i], conds, rng)
			for jj, j := range judges {
				tallies[ti+jj].add(j, walls[jj])
			}
			ti += len(judges)
		}
		done = k + 1
		if done%5 == 0 && done < n {
			t.Logf("after %d trials, %v, load %s:\n%s", done, time.Since(start).Round(time.Second), LoadAverage(), table())
		}
	}
	t.Logf("TestAccuracyVerdict: %d trials per head in %v, %s, load average (1 min) %s before, %s after; default policy and design; %d requests at %g req/s a run\n%s",
		done, time.Since(start).Round(time.Second), machine, load0, LoadAverage(), seqCellRequests, seqCellRate, table())
}
