package metrics

import (
	"encoding/json"
	"testing"
	"time"
)

// TestLatenessLeavesOutSlotWaits: a request that waited for a concurrency
// slot is late only by the time between the slot's release and its send;
// schedule lag counts the whole wait.
func TestLatenessLeavesOutSlotWaits(t *testing.T) {
	ms := time.Millisecond
	recs := []Record{
		// On time, no wait.
		{Scheduled: 100 * ms, Dispatched: 100 * ms, Free: 100 * ms, Start: 100 * ms, Success: true},
		// Waited 400 ms for a slot, then sent 2 ms after the slot freed.
		{Scheduled: 100 * ms, Dispatched: 100 * ms, Free: 500 * ms, Start: 502 * ms, Success: true},
		// No wait, but sent 30 ms after its time: the generator was behind.
		{Scheduled: 200 * ms, Dispatched: 230 * ms, Free: 200 * ms, Start: 230 * ms, Success: true},
	}
	s := Summarize(recs, time.Second, Options{Percentiles: []float64{100}})
	for name, want := range map[string]float64{
		"p100_lateness_ms":     30,
		"mean_lateness_ms":     32.0 / 3,
		"p100_schedule_lag_ms": 402,
	} {
		if got, ok := s.Value(name); !ok || !close(got, want, 1e-9) {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, want)
		}
	}
}

func TestHealthValues(t *testing.T) {
	s := Summarize([]Record{rec(0, 10, 1)}, 2*time.Second, Options{})
	if _, ok := s.Value(ClientCPURatio); ok {
		t.Error("health known before it was measured")
	}
	if !KnownMetric(ClientCPURatio) || !KnownMetric("p99_lateness_ms") {
		t.Error("health names unknown to KnownMetric")
	}
	s.Health = Health{Measured: true, CPUTime: time.Second, CPUs: 2, GCPause: 1500 * time.Microsecond, GCCycles: 3,
		SchedLatencyP99: 4 * time.Millisecond, LoadAvg: 1.25, RunQueueWait: 500 * time.Millisecond}
	for name, want := range map[string]float64{
		ClientCPURatio: 0.25, ClientCPUs: 2, GCPauseMS: 1.5, GCCycles: 3, SchedLatencyP99MS: 4, LoadAvg1m: 1.25, RunQueueWaitRatio: 0.25,
	} {
		if got, ok := s.Value(name); !ok || !close(got, want, 1e-12) {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, want)
		}
	}
	var res map[string]any
	if err := json.Unmarshal(s.ResultJSON(RunInfo{Extras: true, Invalid: "p99_lateness_ms = 80"}, false), &res); err != nil {
		t.Fatal(err)
	}
	if res[ClientCPURatio] != 0.25 || res["invalid"] != "p99_lateness_ms = 80" || res["p99_lateness_ms"] == nil {
		t.Errorf("result JSON: cpu %v, invalid %v, lateness %v", res[ClientCPURatio], res["invalid"], res["p99_lateness_ms"])
	}
	s.Health.LoadAvg, s.Health.RunQueueWait = -1, -1
	for _, name := range []string{LoadAvg1m, RunQueueWaitRatio} {
		if _, ok := s.Value(name); ok {
			t.Errorf("unknown %s reported", name)
		}
	}
}
