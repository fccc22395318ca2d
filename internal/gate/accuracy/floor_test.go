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

	"github.com/servegate/servegate/internal/stats"

	"github.com/servegate/servegate/internal/gate"
)

// The environment of BenchmarkVerdictFloor: SERVEGATE_FLOOR=1 runs it
// (minutes of simulator pairs); SERVEGATE_FLOOR_PAIRS sets the measured
// A/A pairs per run size and machine (default 20, at least 4);
// SERVEGATE_FLOOR_MACHINES picks the machines (default "burner,quiet").
const (
	envFloor         = "SERVEGATE_FLOOR"
	envFloorPairs    = "SERVEGATE_FLOOR_PAIRS"
	envFloorMachines = "SERVEGATE_FLOOR_MACHINES"
)

// A floorSize is one run size of the floor's pairs: requests chat
// requests at rate req/s (Poisson) against the accuracy simulator, the
// sequential cell's scenario (simPairSource) at another length.
type floorSize struct {
	Requests int
	Rate     float64
}

func (s floorSize) String() string { return fmt.Sprintf("%dreq@%g", s.Requests, s.Rate) }

// floorSizes are the run sizes the floor measures, one pair of each in
// turn so that the machine's drift falls on all alike: the sequential
// cell's (seqCellRequests at seqCellRate), half and twice its length at
// the same rate, to see whether the noise per root second of wall time
// is a constant of the machine or depends on the run's length.
var floorSizes = []floorSize{
	{seqCellRequests / 2, seqCellRate},
	{seqCellRequests, seqCellRate},
	{2 * seqCellRequests, seqCellRate},
}

// fixedSampleWall is the wall time, in seconds, that the best
// fixed-sample test needs on a statistic whose estimate from one pair
// has standard deviation sigma (a log ratio) and whose pair costs pair
// seconds of wall: a one-sided z-test on the mean of n pairs tells a
// shift of delta (a log ratio) from none at false-fail alpha with power
// 1-beta when n = ((z_{1-alpha} + z_{1-beta}) sigma / delta)², and the
// n pairs cost n × pair seconds. Written with s = sigma √pair (the noise
// per root second), it is ((z_{1-alpha} + z_{1-beta}) s / delta)². By
// the Neyman-Pearson lemma no test that must decide within a fixed wall
// time, sequential or not, has more power on the mean of these pairs'
// estimates: this is the floor of the cap.
func fixedSampleWall(sigma, pair, delta, alpha, beta float64) float64 {
	z := stats.NormalQuantile(1-alpha) + stats.NormalQuantile(1-beta)
	s := sigma * math.Sqrt(pair)
	return math.Pow(z*s/delta, 2)
}

// waldASNFraction is the SPRT's average number of observations at
// "no change" (h0) and at "a shift of delta" (h1), as a fraction of the
// fixed-sample test's n at the same alpha and beta (fixedSampleWall): by
// Wald's approximation (no overshoot of the boundaries) for normal
// observations of known variance,
//
//	E1[N] = ((1-beta) log((1-beta)/alpha) + beta log(beta/(1-alpha))) / (delta²/2sigma²),
//	E0[N] = ((1-alpha) log((1-alpha)/beta) + alpha log(alpha/(1-beta))) / (delta²/2sigma²),
//
// and n = (z_{1-alpha} + z_{1-beta})² sigma²/delta². Wald and Wolfowitz
// showed the SPRT has the smallest average number at both hypotheses of
// all tests with these error rates, so h1 is the most a sequential design
// can save on average under the regression; overshoot, a minimum number
// of pairs and a cap only make it save less.
func waldASNFraction(alpha, beta float64) (h0, h1 float64) {
	z := stats.NormalQuantile(1-alpha) + stats.NormalQuantile(1-beta)
	n := z * z / 2 // the fixed n in units of 2sigma²/delta²
	a, b := math.Log((1-beta)/alpha), math.Log(beta/(1-alpha))
	h1 = ((1-beta)*a + beta*b) / n
	h0 = ((1-alpha)*-b + alpha*-a) / n
	return h0, h1
}

// chiSquareQuantile is the p-quantile of the chi-square distribution
// with df degrees of freedom, by the Wilson-Hilferty cube-root normal
// approximation (within about 1% from 10 degrees of freedom on).
func chiSquareQuantile(p float64, df int) float64 {
	k := float64(df)
	c := 2 / (9 * k)
	return k * math.Pow(1-c+stats.NormalQuantile(p)*math.Sqrt(c), 3)
}

// TestCapDetectable checks the cap's detectable regression against the
// normal quantiles: alpha 0.01 split between five (figures and the
// failure test) and six looks is 3.33e-4 a look, z = 3.4029, plus
// z_0.95 = 1.6449, over √8.
func TestCapDetectable(t *testing.T) {
	got := capDetectable(0.05, 0.01/5)
	if want := 0.05 * 5.0478 / math.Sqrt(8); !(math.Abs(got-want) <= 1e-3*want) { // NaN fails too
		t.Fatalf("capDetectable(5%%, 0.002) = %.5f, want %.5f", got, want)
	}
	if !(capDetectable(0.10, 0.01/5) > 0.10) {
		t.Fatal("a pair spread of 10% must leave more than 10% detectable at 8 pairs")
	}
}

// TestFixedSampleWall checks the floor's arithmetic against textbook
// values of the normal approximation.
func TestFixedSampleWall(t *testing.T) {
	cases := []struct {
		name                            string
		sigma, pair, delta, alpha, beta float64
		want                            float64
	}{
		// (1.6449 + 1.6449)² = 10.822: the classic n for alpha = beta = 5%.
		{"alpha 5% power 95%, unit noise", 1, 1, 1, 0.05, 0.05, 10.8222},
		// (2.3263 + 1.6449)² = 15.770, times 4 s a pair.
		{"alpha 1% power 95%, 4 s a pair", 1, 4, 1, 0.01, 0.05, 4 * 15.7704},
		// (z_{1-0.01/3} = 2.7131 + 1.6449)² × (0.05·√5 / log 1.05)² = 18.991 × 5.2510 = 99.72 s.
		{"the fast verdict's split alpha, 5% spread, 5 s pairs, +5%", 0.05, 5, math.Log(1.05), 0.01 / 3, 0.05, 99.72},
		// Doubling the noise quadruples the time.
		{"twice the noise", 2, 1, 1, 0.05, 0.05, 4 * 10.8222},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := fixedSampleWall(c.sigma, c.pair, c.delta, c.alpha, c.beta)
			if math.Abs(got-c.want) > 1e-3*c.want {
				t.Errorf("fixedSampleWall(%v, %v, %v, %v, %v) = %.4f, want %.4f", c.sigma, c.pair, c.delta, c.alpha, c.beta, got, c.want)
			}
		})
	}
	// Wald's ASN at alpha = beta = 5%: E1[N] = 2 · 0.9 · log 19 / 10.822
	// of the fixed n = 0.4897 (the textbook "an SPRT saves about half").
	// At the fast verdict's split alpha (0.01/3) and beta 5%: E1[N] =
	// (0.95 log(0.95/0.00333) + 0.05 log(0.05/0.99667)) / (4.3579²/2) =
	// 0.5498, E0[N] = 0.3121 of the fixed n.
	for _, v := range []struct {
		alpha, beta float64
		h0, h1      float64
	}{{0.05, 0.05, 0.4897, 0.4897}, {0.01 / 3, 0.05, 0.3121, 0.5498}} {
		h0, h1 := waldASNFraction(v.alpha, v.beta)
		if math.Abs(h0-v.h0) > 1e-3 || math.Abs(h1-v.h1) > 1e-3 {
			t.Errorf("waldASNFraction(%v, %v) = %.4f, %.4f, want %.4f, %.4f", v.alpha, v.beta, h0, h1, v.h0, v.h1)
		}
	}
	// The robust spread: 1, 2, 3, 4, 100 lie 2, 1, 0, 1, 97 from their
	// median 3, whose median is 1: 1.4826, where the sd is 43.
	if got := madSigma([]float64{1, 2, 3, 4, 100}); math.Abs(got-1.4826) > 1e-9 {
		t.Errorf("madSigma(1, 2, 3, 4, 100) = %v, want 1.4826", got)
	}
	// The chi-square quantiles the interval uses: 19 degrees of freedom,
	// 5% and 95% (tables: 10.117 and 30.144).
	for _, v := range []struct{ p, want float64 }{{0.05, 10.117}, {0.95, 30.144}} {
		if got := chiSquareQuantile(v.p, 19); math.Abs(got-v.want) > 0.01*v.want {
			t.Errorf("chiSquareQuantile(%v, 19) = %.3f, want %.3f", v.p, got, v.want)
		}
	}
}

// madSigma is the spread of x by its median absolute deviation, scaled
// by 1.4826 so that it estimates the standard deviation of a normal
// sample: far below stddev(x) when a few values lie far out.
func madSigma(x []float64) float64 {
	m := stats.Median(x)
	dev := make([]float64, len(x))
	for i, v := range x {
		dev[i] = math.Abs(v - m)
	}
	return 1.4826 * stats.Median(dev)
}

// floorFigure is one gated figure's per-pair estimates at one run size.
type floorFigure struct {
	Unit      string
	Tolerance float64
	Better    int
	D, SE     []float64
}

// delta is the regression of the tolerance as a log ratio, as the
// sequential test puts it (Sequential.Decide).
func (f *floorFigure) delta() float64 {
	if f.Better == 1 {
		return -math.Log(1 - f.Tolerance)
	}
	return math.Log(1 + f.Tolerance)
}

// floorName is a figure's short name in the floor's metrics: p99 for
// p99 TTFT, as the floor's first logs named it.
func floorName(unit string) string {
	switch unit {
	case "ttft-p99-sec":
		return "p99"
	case "ttft-p50-sec":
		return "p50"
	case "tpot-p50-sec":
		return "tpot"
	case "goodput-req/s":
		return "goodput"
	}
	return strings.NewReplacer("/", "-", "-sec", "").Replace(unit)
}

// capDetectable is the smallest regression, as a log ratio, that the
// default design's last look (pair MaxPairs) detects with probability
// 95% when each pair's estimate has standard deviation sigma and the
// figure's share of alpha is alpha: stats.Sequential.Look's Detectable
// at standard error sigma/√MaxPairs. It is a lower bound: the verdict
// widens the spread between pairs to Student's t reach. Above twice a
// figure's tolerance, the verdict cannot judge at the cap.
func capDetectable(sigma, alpha float64) float64 {
	d := gate.DefaultSequential()
	design := stats.Sequential{Alpha: alpha, Beta: d.Beta, MinLooks: d.MinPairs, MaxLooks: d.MaxPairs}
	l, err := design.Look(d.MaxPairs, 0, sigma/math.Sqrt(float64(d.MaxPairs)), 1)
	if err != nil {
		return math.NaN()
	}
	return l.Detectable
}

// floorPair judges one pair as the fast verdict's first look does (a
// FastJudge of the default policy and design) and returns each
// sequential figure's estimate of that pair.
func floorPair(tb testing.TB, run gate.PairRun, rng *rand.Rand) []*gate.FastFigure {
	tb.Helper()
	j, err := gate.NewFastJudge(gate.DefaultSequential(), gate.DefaultPolicy(), 0, 0, rng)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := j.Add(run); err != nil {
		tb.Fatal(err)
	}
	return j.Figures()
}

// BenchmarkVerdictFloor measures the floor of the fast verdict's
// statistic on this machine: A/A pairs of the sequential cell's scenario
// (simPairSource: two in-process simulators of one build, one schedule,
// at the same time), at three run sizes one pair of each in turn, beside
// the burner of TestAccuracyNoise (TestNeighbour) and on the machine
// without it; SERVEGATE_ACCURACY_CONTAINER=1 runs the two simulators
// as containers. Each pair is judged by the fast verdict's own code
// (FastJudge, default policy) and gives the paired log ratio of each
// figure the policy gates; per run size it reports
//
//   - sigma: the standard deviation of the per-pair log ratio (%),
//   - t: the mean wall time of a pair (s; also ns/op, an op being a pair),
//   - s = sigma √t: the noise per root second (% √s),
//   - Tmin = ((z_{1-alpha} + z_{1-beta}) s / delta)²: the wall time the
//     best fixed-sample test on this statistic needs to catch a
//     regression of the tolerance (delta = log 1.05 for +5% p99 TTFT)
//     with power 1-beta, at the alpha FastJudge spends on the figure
//     after its Bonferroni split (s), with a 90% interval from sigma's
//     chi-square interval,
//   - Tasn: Tmin times Wald's average-sample-number fraction of the SPRT
//     at the regression (waldASNFraction): the most an SPRT saves on
//     average; Tasn0 the same at no change (an A/A),
//   - capdetect: the smallest regression the last look (the cap)
//     detects at this sigma (capDetectable); above twice the figure's
//     tolerance the verdict cannot judge.
//
// The pairs are measured in the machine's sub-benchmark and reported by
// one sub-benchmark per run size. Run it alone, under the exclusive
// lock, with -benchtime 1x (docs/logs/2026-12-02-verdicts.md, "The
// floor beside a burner"):
//
//	SERVEGATE_FLOOR=1 go test ./internal/gate/accuracy/ -run '^$' -bench VerdictFloor -benchtime 1x -timeout 60m
func BenchmarkVerdictFloor(b *testing.B) {
	if os.Getenv(envFloor) == "" {
		b.Skipf("set %s=1 to run (minutes of simulator pairs)", envFloor)
	}
	pairs := 20
	if v := os.Getenv(envFloorPairs); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 {
			b.Fatalf("%s=%q: want a number of pairs, at least 4", envFloorPairs, v)
		}
		pairs = n
	}
	machines := []string{"burner", "quiet"}
	if v := os.Getenv(envFloorMachines); v != "" {
		machines = strings.Split(v, ",")
	}
	j, err := gate.NewFastJudge(gate.DefaultSequential(), gate.DefaultPolicy(), 0, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	// The fast verdict splits its alpha evenly between the figures it
	// judges and the failure test (gate.FastJudge); the floor's pairs
	// report every figure of the default policy.
	alpha, beta := gate.DefaultSequential().Alpha/float64(len(j.Figures())+1), gate.DefaultSequential().Beta
	asn0, asn1 := waldASNFraction(alpha, beta)
	for _, m := range machines {
		if m != "burner" && m != "quiet" {
			b.Fatalf("%s: unknown machine %q: want burner or quiet", envFloorMachines, m)
		}
		b.Run(m, func(b *testing.B) {
			if m == "burner" {
				startNeighbour(b)
				defer stopNeighbours()
			}
			measureFloor(b, m, pairs, alpha, beta, asn0, asn1)
		})
	}
}

// measureFloor runs pairs A/A pairs of each floorSize, one of each in
// turn, and reports each size in a sub-benchmark of its own.
func measureFloor(b *testing.B, machine string, pairs int, alpha, beta, asn0, asn1 float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	sr := newSimRunner(b)
	if os.Getenv(envVerdictContainer) == "1" {
		sr.start = containerStarter(b, ctx)
		machine += ", containers"
	}
	rng := rand.New(rand.NewPCG(27, 17))
	load0 := LoadAverage()
	nexts := make([]func() (seqPair, error), len(floorSizes))
	figs := make([][]*floorFigure, len(floorSizes))
	walls := make([][]float64, len(floorSizes))
	for i, s := range floorSizes {
		nexts[i] = simPairSource(ctx, b, sr, s.Requests, s.Rate, 0)
		if _, err := nexts[i](); err != nil { // warm the servers and connections
			b.Fatal(err)
		}
	}
	start := time.Now()
	for k := range pairs {
		for i, s := range floorSizes {
			p, err := nexts[i]()
			if err != nil {
				b.Fatalf("%s pair %d: %v", s, k+1, err)
			}
			walls[i] = append(walls[i], p.Wall.Seconds())
			for fi, f := range floorPair(b, p.Run, rng) {
				if k == 0 {
					figs[i] = append(figs[i], &floorFigure{Unit: f.Unit, Tolerance: f.Tolerance, Better: f.Better})
				}
				ff := figs[i][fi]
				ff.D, ff.SE = append(ff.D, f.Estimates[0].D), append(ff.SE, f.Estimates[0].SE)
			}
		}
	}
	head := fmt.Sprintf("%s: %d pairs of each size in %v, load %s → %s; alpha per figure %.4g, beta %.2g, Wald's ASN %.2f of the fixed n at the regression, %.2f at no change (Tasn0)\n"+
		"| run | machine | figure | sigma per pair (90%%) | mean bootstrap SE | mean D | t per pair | s = sigma·√t | Tmin (90%%) | Tasn (SPRT, Wald) | detectable at the cap |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
		machine, pairs, time.Since(start).Round(time.Second), load0, LoadAverage(), alpha, beta, asn1, asn0)
	for i, s := range floorSizes {
		var rows []string
		t := stats.Mean(walls[i])
		metrics := map[string]float64{"ns/op": t * 1e9, "t-s": t, "pairs": float64(pairs)}
		for _, f := range figs[i] {
			name := floorName(f.Unit)
			sigma := stddev(f.D)
			df := len(f.D) - 1
			// sigma's 90% interval: df·sigma²/sigma_true² is chi-square.
			lo := sigma * math.Sqrt(float64(df)/chiSquareQuantile(0.95, df))
			hi := sigma * math.Sqrt(float64(df)/chiSquareQuantile(0.05, df))
			tmin := fixedSampleWall(sigma, t, f.delta(), alpha, beta)
			tlo, thi := fixedSampleWall(lo, t, f.delta(), alpha, beta), fixedSampleWall(hi, t, f.delta(), alpha, beta)
			for unit, v := range map[string]float64{
				"sigma-%s-%%": 100 * sigma, "bootSE-%s-%%": 100 * stats.Mean(f.SE), "meanD-%s-%%": 100 * stats.Mean(f.D),
				"s-%s-%%sqrt-s": 100 * sigma * math.Sqrt(t), "Tmin-%s-s": tmin, "Tmin90lo-%s-s": tlo, "Tmin90hi-%s-s": thi,
				"Tasn-%s-s": asn1 * tmin, "Tasn0-%s-s": asn0 * tmin, "sigmaMAD-%s-%%": 100 * madSigma(f.D),
				"capdetect-%s-%%": 100 * capDetectable(sigma, alpha),
			} {
				metrics[fmt.Sprintf(unit, name)] = v
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %.2f%% (%.2f–%.2f) | %.2f%% | %+.2f%% | %.2f s | %.2f%%·√s | %.0f s (%.0f–%.0f) | %.0f s | %.1f%% (%.1f–%.1f) |",
				s, machine, name, 100*sigma, 100*lo, 100*hi, 100*stats.Mean(f.SE), 100*stats.Mean(f.D), t, 100*sigma*math.Sqrt(t), tmin, tlo, thi, asn1*tmin,
				100*capDetectable(sigma, alpha), 100*capDetectable(lo, alpha), 100*capDetectable(hi, alpha)))
			sorted := slices.Clone(f.D)
			slices.Sort(sorted)
			var ds []string
			for _, d := range sorted {
				ds = append(ds, fmt.Sprintf("%+.1f", 100*d))
			}
			rows = append(rows, fmt.Sprintf("%s %s: robust spread 1.4826·MAD %.2f%%; per-pair D (%%), sorted: %s", s, name, 100*madSigma(f.D), strings.Join(ds, " ")))
		}
		b.Run(s.String(), func(b *testing.B) {
			for unit, v := range metrics {
				b.ReportMetric(v, unit)
			}
			if b.N == 1 { // a benchmark's log is kept over its runs: once
				b.Logf("%s\n%s", head, strings.Join(rows, "\n"))
			}
		})
	}
}
