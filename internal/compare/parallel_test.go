package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envMeasure runs BenchmarkParallel: it needs Docker and minutes.
const envMeasure = "SERVEGATE_COMPARE_MEASURE"

// countingJudge asks for a fixed number of pairs, then passes, and
// keeps each pair's log ratios head/base of the figures it watches.
type countingJudge struct {
	pairs int
	mu    sync.Mutex
	logs  map[string][]float64
}

// watched are the result JSON's figures whose A/A log ratio is kept.
var watched = []string{"median_ttft_ms", "p99_ttft_ms", "median_tpot_ms"}

func (j *countingJudge) Judge(name string, pairs []*Record) (Verdict, error) {
	r := pairs[len(pairs)-1]
	base, err := summary(r.BasePath())
	if err != nil {
		return Verdict{}, err
	}
	head, err := summary(r.HeadPath())
	if err != nil {
		return Verdict{}, err
	}
	j.mu.Lock()
	for _, f := range watched {
		if b, h := base[f], head[f]; b > 0 && h > 0 {
			j.logs[f] = append(j.logs[f], math.Log(h/b))
		}
	}
	j.mu.Unlock()
	if len(pairs) < j.pairs {
		return Verdict{State: Continue, Pairs: len(pairs)}, nil
	}
	return Verdict{State: Pass, Pairs: len(pairs), Reason: "counted"}, nil
}

// summary reads a result JSON's summary figures.
func summary(path string) (map[string]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range watched {
		if v, ok := m[f].(float64); ok {
			out[f] = v
		}
	}
	return out, nil
}

// BenchmarkParallel measures what running scenarios side by side buys
// and costs on the shipped suite: an A/A comparison of this checkout's
// HEAD with its working tree, PAIRS pairs a scenario (default 3), with
// -parallel 1, 2, 3 and 4. It reports the wall time per round, the
// largest share of a harness limit any run used (headroom-max), and the
// A/A spread of each watched figure: the root mean square of the pairs'
// log ratios head/base, which parallel runs must not raise. PARALLEL,
// a comma-separated list, replaces the -parallel values.
//
//	SERVEGATE_COMPARE_MEASURE=1 go test -run '^$' -bench Parallel -benchtime 1x -timeout 60m ./internal/compare
func BenchmarkParallel(b *testing.B) {
	if os.Getenv(envMeasure) != "1" {
		b.Skipf("runs the shipped suite for minutes; set %s=1", envMeasure)
	}
	pairs := 3
	if v, err := strconv.Atoi(os.Getenv("PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	levels := []int{1, 2, 3, 4}
	if v := os.Getenv("PARALLEL"); v != "" {
		levels = nil
		for f := range strings.SplitSeq(v, ",") {
			p, err := strconv.Atoi(f)
			if err != nil || p < 1 {
				b.Fatalf("PARALLEL=%s: want a comma-separated list of numbers >= 1", v)
			}
			levels = append(levels, p)
		}
	}
	for _, p := range levels {
		b.Run(fmt.Sprintf("parallel=%d", p), func(b *testing.B) {
			for range b.N {
				j := &countingJudge{pairs: pairs, logs: map[string][]float64{}}
				log := &headroomLog{}
				start := time.Now()
				res, err := Run(context.Background(), Config{
					Dir: "../..", Base: "HEAD", Packages: []string{"./scenarios"}, Parallel: p,
					Out: b.TempDir(), Judge: j, Log: log,
				})
				if err != nil {
					b.Fatal(err)
				}
				wall := time.Since(start).Seconds()
				b.ReportMetric(wall/float64(pairs), "sec/round")
				b.ReportMetric(wall, "sec/comparison")
				b.ReportMetric(log.max(res), "headroom-max")
				for _, f := range watched {
					b.ReportMetric(rms(j.logs[f]), "aa-rms-"+f)
				}
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// headroomLog is a progress writer for the benchmark.
type headroomLog struct{ mu sync.Mutex }

func (l *headroomLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return os.Stderr.Write(p)
}

// max is the largest headroom of any run of the comparison's rounds.
func (l *headroomLog) max(res *Result) float64 {
	m := 0.0
	for _, s := range res.Scenarios {
		m = math.Max(m, s.Headroom)
	}
	return m
}

func rms(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x * x
	}
	return math.Sqrt(s / float64(len(xs)))
}

// TestAdapt: an automatic -parallel halves after a round whose typical
// run was short of CPU, not after one run's spike, and never grows; a
// -parallel given stays.
func TestAdapt(t *testing.T) {
	s := &binaries{parallel: DefaultParallel, auto: true, log: io.Discard}
	spike := []float64{0.05, 0.04, 0.98, 0.07, 0.06} // e-aa3's pair 2: one run at 98%
	short := []float64{0.6, 0.7, 0.55, 0.2, 0.9}
	for i, step := range []struct {
		used  []float64
		procs int
		want  int
	}{
		{[]float64{0.05, 0.1}, 2, 2}, // CPU to spare: as it was
		{spike, 2, 2},                // one run's spike
		{short, 2, 1},                // most runs short of CPU
		{[]float64{0.05}, 1, 1},      // no growth
		{short, 1, 1},                // one process is the floor
	} {
		s.adapt(step.used, step.procs)
		require.Equal(t, step.want, s.parallel, "step %d: used %v over %d processes", i+1, step.used, step.procs)
	}
	fixed := &binaries{parallel: 2, log: io.Discard}
	fixed.adapt(short, 2)
	require.Equal(t, 2, fixed.parallel)
}
