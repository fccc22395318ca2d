package engine

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/servegate/servegate/internal/childserver"
	"github.com/servegate/servegate/internal/cputime"
	"github.com/servegate/servegate/internal/metrics"
)

// BenchmarkScheduleFidelity runs a 2,000 req/s Poisson schedule against a
// server that answers each request with a recorded vLLM stream, and reports the schedule lag (send time minus
// scheduled time) at p50 and p99 in microseconds, the dispatcher's own
// lag (release time minus scheduled time), and the process's CPU use; the
// target is p99 under 1 ms. Each op is a one-second run of 2,000
// requests. server=child runs the server in a child process, as a real
// target is (the figures are the engine's); server=inproc shares this
// process and its two processors with the engine. spin=1.5ms is the
// default precise wait, spin=0s Go timers alone.
func BenchmarkScheduleFidelity(b *testing.B) {
	for _, child := range []bool{true, false} {
		for _, spin := range []time.Duration{defaultSpinWindow, -1} {
			name := fmt.Sprintf("server=%s/spin=%s", map[bool]string{true: "child", false: "inproc"}[child], max(spin, 0))
			b.Run(name, func(b *testing.B) {
				var url string
				if child {
					url = childserver.Start(b, "TestFidelityServer", "streams")
				} else {
					url = newStreamServer(b).URL
				}
				benchFidelity(b, url, spin)
			})
		}
	}
}

// TestFidelityServer is not a test: run by BenchmarkScheduleFidelity in a
// child process, it serves the recorded streams on loopback.
func TestFidelityServer(t *testing.T) {
	if childserver.Mode() == "" {
		t.Skip("helper process for BenchmarkScheduleFidelity")
	}
	childserver.Serve(t, http.HandlerFunc(newStreamServer(t).serve))
}

func benchFidelity(b *testing.B, url string, spin time.Duration) {
	const rate, n = 2000, 2000
	var lags, dlags []float64
	cpu0, wall0 := cputime.Process(), time.Now()
	for b.Loop() {
		res, err := Run(b.Context(), Config{
			BaseURL:     url,
			Backend:     "openai",
			Model:       "m",
			RequestRate: rate,
			Seed:        int64(len(lags)),
			SpinWindow:  spin,
		}, samples(n))
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res.Records {
			if !r.Success {
				b.Fatalf("request failed: %s", r.Error)
			}
			lags = append(lags, float64(r.Start-r.Scheduled)/float64(time.Microsecond))
			dlags = append(dlags, float64(r.Dispatched-r.Scheduled)/float64(time.Microsecond))
		}
	}
	// Process CPU (client, in-process server and dispatcher) over wall time.
	b.ReportMetric(100*float64(cputime.Process()-cpu0)/float64(time.Since(wall0)), "cpu-%")
	// Summarize the lags with the metrics package's percentiles: the
	// schedule lag proper (send time) and the dispatcher's own lateness
	// (release time, before the request goroutine runs).
	recs := make([]metrics.Record, len(lags))
	for i := range lags {
		recs[i] = metrics.Record{
			Start:      time.Duration(lags[i] * float64(time.Microsecond)),
			Dispatched: time.Duration(lags[i]*float64(time.Microsecond)) - time.Duration(dlags[i]*float64(time.Microsecond)),
		}
	}
	s := metrics.Summarize(recs, time.Second, metrics.Options{})
	for _, p := range []string{"p50", "p99"} {
		lag, _ := s.Value(p + "_schedule_lag_ms")
		b.ReportMetric(lag*1000, p+"-lag-µs")
	}
	for i := range recs {
		recs[i].Start = time.Duration(dlags[i] * float64(time.Microsecond))
		recs[i].Dispatched = 0
	}
	s = metrics.Summarize(recs, time.Second, metrics.Options{})
	for _, p := range []string{"p50", "p99"} {
		lag, _ := s.Value(p + "_schedule_lag_ms")
		b.ReportMetric(lag*1000, p+"-dispatch-lag-µs")
	}
}
