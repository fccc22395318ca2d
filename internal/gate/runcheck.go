package gate

import (
	"fmt"
	"math"
)

// runCheck is the part of a detailed result file that says whether the
// run speaks for the server, and the per-request fields TPOT is computed
// from. The paired readers refuse an interrupted or invalid run, as the
// benchfmt readers refuse its result lines (refusedRuns): a run cut
// short or whose load generator fell behind says nothing about the
// server, and judging it as a whole run could pass a regression.
type runCheck struct {
	// Interrupted and InterruptedBy mark a run cut short.
	Interrupted   bool   `json:"interrupted"`
	InterruptedBy string `json:"interrupted_by"`
	// Invalid, when a non-empty string, says why the run is invalid.
	Invalid *string `json:"invalid"`
	// Latencies are the requests' end-to-end latencies in seconds and
	// OutputLens their output tokens: vLLM's --save-detailed arrays.
	Latencies  []float64 `json:"latencies"`
	OutputLens []int     `json:"output_lens"`
}

// check refuses an interrupted or invalid run, and per-request arrays
// whose length is not the file's n requests.
func (r *runCheck) check(n int) error {
	if r.Interrupted {
		why := r.InterruptedBy
		if why == "" {
			why = "no reason given"
		}
		return fmt.Errorf("read result: an interrupted run (%s): it speaks for part of its schedule only; rerun the whole pair", why)
	}
	if r.Invalid != nil && *r.Invalid != "" {
		return fmt.Errorf("read result: an invalid run (%s): rerun the whole pair on a machine with CPU to spare", *r.Invalid)
	}
	if r.Latencies != nil && len(r.Latencies) != n {
		return fmt.Errorf("read result: latencies: %d entries for %d requests", len(r.Latencies), n)
	}
	if r.OutputLens != nil && len(r.OutputLens) != n {
		return fmt.Errorf("read result: output_lens: %d entries for %d requests", len(r.OutputLens), n)
	}
	return nil
}

// hasTPOT reports whether the file carries what TPOT is computed from.
func (r *runCheck) hasTPOT() bool { return r.Latencies != nil && r.OutputLens != nil }

// tpot is request i's TPOT in seconds, computed as vLLM's benchmark
// does: (latency - TTFT) / (output tokens - 1), 0 for fewer than two
// output tokens or values that make no sense (a failed request).
func (r *pairedResult) tpot(i int) float64 {
	if r.OutputLens[i] < 2 {
		return 0
	}
	v := (r.Latencies[i] - r.TTFTs[i]) / float64(r.OutputLens[i]-1)
	if !(v > 0) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// tpotPairs returns the requests that succeeded on both sides with a
// TPOT on both (two output tokens or more) as TPOT request pairs, and
// how many were left out.
func (p PairRun) tpotPairs() (pairs []RequestPair, dropped int) {
	for _, r := range p.Requests {
		if r.BaseFailed || r.HeadFailed || !(r.BaseTPOT > 0 && r.HeadTPOT > 0) {
			dropped++
			continue
		}
		pairs = append(pairs, RequestPair{Start: r.Start, Base: r.BaseTPOT, Head: r.HeadTPOT})
	}
	return pairs, dropped
}
