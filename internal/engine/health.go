package engine

import (
	"math"
	"runtime"
	rtmetrics "runtime/metrics"
	"time"

	"github.com/servegate/servegate/internal/cputime"
	"github.com/servegate/servegate/internal/metrics"
)

// schedLatencies is the Go runtime's histogram of how long runnable
// goroutines waited to run.
const schedLatencies = "/sched/latencies:seconds"

// A healthProbe holds the process's counters at the start of a run, so
// that the end of the run can report what the run itself cost.
type healthProbe struct {
	cpu     time.Duration
	wait    time.Duration
	waitOK  bool
	gcPause uint64
	numGC   uint32
	sched   *rtmetrics.Float64Histogram
}

// startHealth reads the counters at the start of a run.
func startHealth() *healthProbe {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p := &healthProbe{cpu: cputime.Process(), gcPause: ms.PauseTotalNs, numGC: ms.NumGC, sched: readSchedLatencies()}
	p.wait, p.waitOK = runQueueWait()
	return p
}

// finish reads the counters again and returns the run's health. A process
// whose CPU time cannot be read reports Measured false.
func (p *healthProbe) finish() metrics.Health {
	cpu := cputime.Process()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := metrics.Health{
		Measured: cpu > 0,
		CPUTime:  cpu - p.cpu,
		CPUs:     usableCPUs(),
		GCPause:  time.Duration(ms.PauseTotalNs - p.gcPause),
		GCCycles: int(ms.NumGC - p.numGC),
		LoadAvg:  loadAverage(),
	}
	h.SchedLatencyP99 = histogramQuantile(p.sched, readSchedLatencies(), 0.99)
	h.RunQueueWait = -1
	if wait, ok := runQueueWait(); ok && p.waitOK {
		h.RunQueueWait = max(wait-p.wait, 0)
	}
	return h
}

func readSchedLatencies() *rtmetrics.Float64Histogram {
	s := []rtmetrics.Sample{{Name: schedLatencies}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// histogramQuantile returns the q quantile of what was added to a
// cumulative histogram between before and after, as the upper edge of the
// bucket it falls in (the lower edge for the last, unbounded bucket): an
// upper bound, never an understatement. It is 0 with nothing added.
func histogramQuantile(before, after *rtmetrics.Float64Histogram, q float64) time.Duration {
	if after == nil {
		return 0
	}
	counts := make([]uint64, len(after.Counts))
	var total uint64
	for i, c := range after.Counts {
		if before != nil && i < len(before.Counts) {
			c -= before.Counts[i]
		}
		counts[i] = c
		total += c
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen < want {
			continue
		}
		edge := after.Buckets[i+1]
		if math.IsInf(edge, 1) {
			edge = after.Buckets[i]
		}
		return time.Duration(edge * 1e9)
	}
	return 0
}
