package metrics

import (
	"slices"
	"time"
)

// A Health says how the load generator's process fared during a run:
// whether it could keep up, so that slow numbers can be told apart from a
// slow server. The engine measures it around the run; the lateness of the
// requests themselves is Summary.Lateness.
type Health struct {
	// Measured is true when the engine read the figures below; a summary
	// of saved records has none, and then the health names are unknown.
	Measured bool
	// CPUTime is the CPU time (user plus system) the process used during
	// the run. An in-process target (inproc) counts in it too.
	CPUTime time.Duration
	// CPUs is the number of CPUs the process may run on.
	CPUs int
	// GCPause is the total stop-the-world garbage collection pause of the
	// process during the run, and GCCycles the collections that ran.
	GCPause  time.Duration
	GCCycles int
	// SchedLatencyP99 is the 99th percentile of how long the process's
	// goroutines waited to run once runnable (Go's /sched/latencies), the
	// upper edge of its histogram bucket: a starved process reads its
	// streams late, which inflates TTFT and ITL.
	SchedLatencyP99 time.Duration
	// LoadAvg is the machine's one-minute load average at the end of the
	// run; negative when unknown.
	LoadAvg float64
	// RunQueueWait is how long the process's threads waited, in total,
	// for a CPU while runnable (Linux schedstat run_delay): the machine
	// starving the generator, which Go's SchedLatencyP99 cannot see.
	// Negative when unknown.
	RunQueueWait time.Duration
}

// The health names Summary.Value answers (with Health.Measured), beside
// the lateness statistics (p99_lateness_ms, mean_lateness_ms, ...).
const (
	// ClientCPURatio is the process's CPU time over the run's duration
	// times the CPUs it may use: 1 means every CPU was busy all run.
	ClientCPURatio = "client_cpu_ratio"
	// ClientCPUs is Health.CPUs.
	ClientCPUs = "client_cpus"
	// GCPauseMS is Health.GCPause in milliseconds.
	GCPauseMS = "gc_pause_ms"
	// GCCycles is Health.GCCycles.
	GCCycles = "gc_cycles"
	// SchedLatencyP99MS is Health.SchedLatencyP99 in milliseconds.
	SchedLatencyP99MS = "sched_latency_p99_ms"
	// LoadAvg1m is Health.LoadAvg.
	LoadAvg1m = "load_avg_1m"
	// RunQueueWaitRatio is Health.RunQueueWait over the run's duration:
	// thread-seconds spent waiting for a CPU per second of the run.
	RunQueueWaitRatio = "runqueue_wait_ratio"
)

// healthNames are the health names, in the order the result JSON lists
// them.
var healthNames = []string{ClientCPURatio, ClientCPUs, GCPauseMS, GCCycles, SchedLatencyP99MS, RunQueueWaitRatio, LoadAvg1m}

func isHealthName(name string) bool { return slices.Contains(healthNames, name) }

// value returns a health figure by name for a run that took dur.
func (h Health) value(name string, dur time.Duration) (float64, bool) {
	if !h.Measured {
		return 0, false
	}
	switch name {
	case ClientCPURatio:
		if h.CPUs < 1 || dur <= 0 {
			return 0, false
		}
		return seconds(h.CPUTime) / (seconds(dur) * float64(h.CPUs)), true
	case ClientCPUs:
		return float64(h.CPUs), true
	case GCPauseMS:
		return seconds(h.GCPause) * 1000, true
	case GCCycles:
		return float64(h.GCCycles), true
	case SchedLatencyP99MS:
		return seconds(h.SchedLatencyP99) * 1000, true
	case LoadAvg1m:
		return h.LoadAvg, h.LoadAvg >= 0
	case RunQueueWaitRatio:
		if h.RunQueueWait < 0 || dur <= 0 {
			return 0, false
		}
		return seconds(h.RunQueueWait) / seconds(dur), true
	}
	return 0, false
}

// setHealth writes the health figures that are known into a result.
func (s *Summary) setHealth(o *object) {
	for _, n := range healthNames {
		if v, ok := s.Value(n); ok {
			o.set(n, v)
		}
	}
}
