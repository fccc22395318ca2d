package gate

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// MaxSteadyState is the largest steady-state window trim (PairRun.Window):
// 0.4 drops the first and the last 40% of the schedule, keeping the
// middle 20%. Past it too few requests would be left for a p99.
const MaxSteadyState = 0.4

// A PairedRequest is request i of one paired run, on both sides.
type PairedRequest struct {
	// Start is the scheduled start offset from the start of the run,
	// in seconds: the same on both sides (in a session run, where a
	// turn is scheduled from the answer to the previous one, the mean
	// of the two sides').
	Start float64
	// BaseTTFT and HeadTTFT are each side's time to first token in
	// seconds (meaningless for a failed request).
	BaseTTFT, HeadTTFT float64
	// BaseFailed and HeadFailed say whether the request failed.
	BaseFailed, HeadFailed bool
	// BaseGood and HeadGood are 1 when the request counted in the
	// side's goodput, 0 when not: weights, so that the accuracy harness
	// can inject a goodput change in the unit (a weight of 0.95).
	BaseGood, HeadGood float64
	// BaseTPOT and HeadTPOT are each side's time per output token after
	// the first, in seconds, as vLLM's benchmark computes it: (latency -
	// TTFT) / (output tokens - 1); 0 when the request has fewer than two
	// output tokens or the files report no latencies.
	BaseTPOT, HeadTPOT float64
}

// A PairRun is one paired run of one scenario (base and head driven
// with one schedule at the same time), request by request: what every
// figure of the fast paired verdict is estimated from.
type PairRun struct {
	// Requests are the run's requests in schedule order (a session
	// run's paired by session, turn and tool round: matchRequests).
	Requests []PairedRequest
	// BaseDuration and HeadDuration are each side's run duration in
	// seconds (0 when the files carry none).
	BaseDuration, HeadDuration float64
	// Goodput says whether both sides report goodput request by request
	// (a scenario with goodput SLOs); BaseGood and HeadGood are 0
	// otherwise.
	Goodput bool
	// TPOT says whether both sides report latencies and output lengths,
	// request by request, so that BaseTPOT and HeadTPOT are set.
	TPOT bool
}

// PairRunFromResults reads one paired run from base's and head's
// detailed result files. It pairs their requests as
// RequestPairsFromResults does (by index and schedule, or a session
// run's by session, turn and tool round), with its checks, and reads
// the goodput of each request when the files report goodput: both or
// neither, and each file's goodput_met must add up to its
// request_goodput. name is how errors call the pair.
func PairRunFromResults(name string, base, head []byte) (PairRun, error) {
	b, err := readPairedResult(base)
	if err != nil {
		return PairRun{}, fmt.Errorf("%s: base: %w", name, err)
	}
	h, err := readPairedResult(head)
	if err != nil {
		return PairRun{}, fmt.Errorf("%s: head: %w", name, err)
	}
	matches, err := matchRequests(b, h)
	if err != nil {
		return PairRun{}, fmt.Errorf("%s: %w", name, err)
	}
	if (b.RequestGoodput == nil) != (h.RequestGoodput == nil) {
		return PairRun{}, fmt.Errorf("%s: not a pair: only one side reports request_goodput (goodput SLOs on one side only)", name)
	}
	var run PairRun
	run.Goodput = b.RequestGoodput != nil
	run.TPOT = b.hasTPOT() && h.hasTPOT()
	if b.Duration != nil && h.Duration != nil {
		run.BaseDuration, run.HeadDuration = *b.Duration, *h.Duration
	}
	if run.Goodput {
		for side, r := range map[string]*pairedResult{"base": b, "head": h} {
			if err := r.checkGoodput(); err != nil {
				return PairRun{}, fmt.Errorf("%s: %s: %w", name, side, err)
			}
		}
	}
	run.Requests = make([]PairedRequest, len(matches))
	for i, m := range matches {
		r := PairedRequest{Start: m.start, BaseTTFT: b.TTFTs[m.b], HeadTTFT: h.TTFTs[m.h], BaseFailed: b.Errors[m.b] != "", HeadFailed: h.Errors[m.h] != ""}
		if run.Goodput {
			r.BaseGood, r.HeadGood = weight(b.GoodputMet[m.b]), weight(h.GoodputMet[m.h])
		}
		if run.TPOT {
			r.BaseTPOT, r.HeadTPOT = b.tpot(m.b), h.tpot(m.h)
		}
		run.Requests[i] = r
	}
	return run, nil
}

// weight is 1 for true, 0 for false.
func weight(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// checkGoodput checks that a file reporting goodput says which requests
// made it, and that they add up to its request_goodput.
func (r *pairedResult) checkGoodput() error {
	if r.GoodputMet == nil {
		return errors.New("reports request_goodput but not goodput_met, request by request: written by a servegate too old for the paired verdict's goodput gate; run both sides with this one")
	}
	if r.Duration == nil {
		return errors.New("reports request_goodput but no duration")
	}
	good := 0
	for _, g := range r.GoodputMet {
		if g {
			good++
		}
	}
	if want := *r.RequestGoodput; math.Abs(float64(good) / *r.Duration - want) > 1e-6*math.Max(1, math.Abs(want)) {
		return fmt.Errorf("goodput_met counts %d good requests in %v s (%.6g req/s), but request_goodput is %v", good, *r.Duration, float64(good) / *r.Duration, want)
	}
	return nil
}

// Window returns the requests of the run's steady state: those scheduled
// after the first trim of the schedule's span and before its last trim
// (trim 0.1 keeps the middle 80%, by scheduled start). It selects by the
// schedule alone, never by a side's completion times, so that base and
// head keep the same requests: a window that dropped the requests still
// running at the end would drop more of a slower head's and hide the
// regression. trim must be in [0, MaxSteadyState]; 0 returns every request.
func (p PairRun) Window(trim float64) (PairRun, error) {
	if !(trim >= 0 && trim <= MaxSteadyState) {
		return PairRun{}, fmt.Errorf("steady-state window %v: want a fraction of the schedule in [0, %v]", trim, MaxSteadyState)
	}
	if trim == 0 || len(p.Requests) == 0 {
		return p, nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range p.Requests {
		lo, hi = math.Min(lo, r.Start), math.Max(hi, r.Start)
	}
	from, to := lo+trim*(hi-lo), hi-trim*(hi-lo)
	out := p
	out.Requests = nil
	for _, r := range p.Requests {
		if r.Start >= from && r.Start <= to {
			out.Requests = append(out.Requests, r)
		}
	}
	// The window's span is the same on both sides: goodput over it is
	// the ratio of the good requests alone.
	out.BaseDuration, out.HeadDuration = 0, 0
	return out, nil
}

// ttftPairs returns the requests that succeeded on both sides as TTFT
// request pairs, and how many were left out because one side failed.
func (p PairRun) ttftPairs() (pairs []RequestPair, dropped int) {
	for _, r := range p.Requests {
		if r.BaseFailed || r.HeadFailed {
			dropped++
			continue
		}
		pairs = append(pairs, RequestPair{Start: r.Start, Base: r.BaseTTFT, Head: r.HeadTTFT})
	}
	return pairs, dropped
}

// goodPairs returns every request's goodput weights as request pairs.
func (p PairRun) goodPairs() []RequestPair {
	out := make([]RequestPair, len(p.Requests))
	for i, r := range p.Requests {
		out[i] = RequestPair{Start: r.Start, Base: r.BaseGood, Head: r.HeadGood}
	}
	return out
}

// durationLogRatio is log(base's duration / head's), the part of the
// goodput log ratio the durations make; 0 when either is unknown.
func (p PairRun) durationLogRatio() float64 {
	if p.BaseDuration > 0 && p.HeadDuration > 0 {
		return math.Log(p.BaseDuration / p.HeadDuration)
	}
	return 0
}

// timeBlock is the block length, in requests, for resampling this run's
// requests in time: blockLength of the per-request TTFT log ratios
// head/base (the requests that succeeded on both sides, in schedule
// order). Goodput's 0/1 weights hide how long a stretch of one side's
// noise lasts (most requests meet the SLO on both sides, whatever the
// noise), the TTFT differences show it; so goodput's bootstrap resamples
// blocks of this length. 0 when too few requests succeeded to tell.
func (p PairRun) timeBlock() int {
	pairs, _ := p.ttftPairs()
	if len(pairs) < 8 {
		return 0
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].Start < pairs[j].Start })
	x := make([]float64, len(pairs))
	for i, r := range pairs {
		if !(r.Base > 0 && r.Head > 0) {
			return 0
		}
		x[i] = math.Log(r.Head / r.Base)
	}
	return blockLength(x)
}
