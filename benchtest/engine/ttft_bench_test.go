package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/servegate/servegate/benchtest/internal/childserver"
	"github.com/servegate/servegate/containers/simulator"
)

// BenchmarkTTFTError measures how far the engine's TTFT is from the
// simulator's ground truth (the server's own time from a request's
// arrival to its first chunk, GET /debug/requests/{id}): what the load
// generator adds to every TTFT it reports. The simulator runs in a child
// process. load=burst starts 1000 streams at once, load=poisson sends 1000
// at 1000 req/s; warm=true opens the connections before time zero
// (scenarios' default), warm=false as they go (vLLM's). It reports the
// mean and p99 error in milliseconds (the goal is a mean under 2 ms and a
// p99 under 10 ms) and the means of its two parts (see ttftErrors).
//
//	go test -run '^$' -bench '^BenchmarkTTFTError$' -benchtime 3x ./benchtest/engine
func BenchmarkTTFTError(b *testing.B) {
	url := childserver.Start(b, "TestTTFTServer", "sim")
	for _, load := range []string{"burst", "poisson"} {
		for _, warm := range []bool{true, false} {
			b.Run(fmt.Sprintf("load=%s/warm=%t", load, warm), func(b *testing.B) {
				rate := math.Inf(1)
				if load == "poisson" {
					rate = 1000
				}
				var errs, in, out []float64
				for b.Loop() {
					e, i, o := ttftErrors(b, url, rate, warm)
					errs, in, out = append(errs, e...), append(in, i...), append(out, o...)
				}
				b.ReportMetric(mean(errs), "ttft-err-mean-ms")
				b.ReportMetric(p99(errs), "ttft-err-p99-ms")
				b.ReportMetric(mean(in), "in-mean-ms")
				b.ReportMetric(mean(out), "out-mean-ms")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// ttftErrors runs 1000 streams and returns each one's client TTFT minus
// the server's, in milliseconds, and its two parts: in, from the client's
// start to the server's arrival (sending, the server's accept queue and
// request parsing), and out, from the server's flush of the first chunk to
// the client's time for it (delivery, waking the reader). The parts
// compare wall clocks of two processes on one machine.
func ttftErrors(b *testing.B, url string, rate float64, warm bool) (errs, in, out []float64) {
	const n = 1000
	cfg := Config{BaseURL: url, Backend: "openai", Model: "servegate/sim-instant", RequestRate: rate, Seed: 1}
	if warm {
		cfg.WarmConnections = WarmAuto
	}
	s := samples(n)
	for i := range s {
		s[i].OutputLen = 16
	}
	res, err := Run(b.Context(), cfg, s)
	if err != nil {
		b.Fatal(err)
	}
	ms := func(d int64) float64 { return float64(d) / float64(time.Millisecond) }
	for _, r := range res.Records {
		if !r.Success {
			b.Fatalf("request %s failed: %s", r.RequestID, r.Error)
		}
		resp, err := http.Get(url + "/debug/requests/" + r.RequestID)
		if err != nil {
			b.Fatal(err)
		}
		var truth simulator.Truth
		err = json.NewDecoder(resp.Body).Decode(&truth)
		resp.Body.Close()
		if err != nil {
			b.Fatalf("truth of %s: %v", r.RequestID, err)
		}
		start := res.Start.UnixNano() + int64(r.Start)
		flush := truth.Arrival + int64(truth.TTFTMS*float64(time.Millisecond))
		errs = append(errs, ms(int64(r.TTFT))-truth.TTFTMS)
		in = append(in, ms(truth.Arrival-start))
		out = append(out, ms(start+int64(r.TTFT)-flush))
	}
	return errs, in, out
}

func mean(x []float64) float64 {
	var sum float64
	for _, v := range x {
		sum += v
	}
	return sum / float64(len(x))
}

// p99 is the 99th percentile of x (nearest rank); it sorts x.
func p99(x []float64) float64 {
	slices.Sort(x)
	return x[int(math.Ceil(0.99*float64(len(x))))-1]
}

// TestTTFTServer is not a test: run by BenchmarkTTFTError in a child
// process, it serves the simulator (instant profile, 1024 sequences a
// step, 2 ms steps) on loopback.
func TestTTFTServer(t *testing.T) {
	if childserver.Mode() == "" {
		t.Skip("helper process for BenchmarkTTFTError")
	}
	srv, err := simulator.New(simulator.Config{Profile: "instant", Set: map[string]string{"step_fixed_ms": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	childserver.Serve(t, srv)
}
