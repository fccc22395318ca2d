package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// A RampUp raises the request rate over the run from StartRPS to EndRPS,
// like vllm bench serve's --ramp-up-strategy.
type RampUp struct {
	// Strategy is "linear" or "exponential".
	Strategy string
	// StartRPS and EndRPS are the first and last request's rate (req/s).
	StartRPS, EndRPS float64
}

// A Schedule is when each request of a run is to be sent.
type Schedule struct {
	// Offsets are the send times from the start of the run, one per
	// request, non-decreasing.
	Offsets []time.Duration
	// Seconds are the same offsets as float seconds, exactly as computed.
	Seconds []float64
	// Rates are the request rate (req/s) in force for each request.
	Rates []float64
}

// NewSchedule builds the arrival schedule of n requests the way vLLM's
// get_request does:
//
//   - rate 0 or +Inf sends every request at once;
//   - otherwise the gaps are gamma-distributed with shape burstiness and
//     scale 1/(rate·burstiness) (exponential, a Poisson process, at
//     burstiness 1), the first request included, and constant 1/rate at
//     burstiness +Inf;
//   - without ramp-up the cumulative offsets are rescaled so that the last
//     request is sent at exactly n/rate;
//   - with ramp-up each request's rate moves from StartRPS to EndRPS with
//     its index (linearly, or geometrically for "exponential"), and no
//     rescaling is done.
//
// The gaps are drawn from seed with Go's PCG generator: the distribution
// is numpy's, the random stream is not, so a seed does not reproduce
// vLLM's exact arrival times.
func NewSchedule(n int, rate, burstiness float64, ramp *RampUp, seed int64) (*Schedule, error) {
	if n <= 0 {
		return nil, errors.New("schedule: no requests")
	}
	if burstiness == 0 {
		burstiness = 1
	}
	if !(burstiness > 0) {
		return nil, fmt.Errorf("schedule: burstiness must be positive, got %v", burstiness)
	}
	if rate == 0 {
		rate = math.Inf(1)
	}
	if rate < 0 || math.IsNaN(rate) {
		return nil, fmt.Errorf("schedule: request rate must be positive, got %v", rate)
	}
	if err := checkRampUp(ramp, rate); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5e7e6a7e))
	s := &Schedule{
		Offsets: make([]time.Duration, n),
		Seconds: make([]float64, n),
		Rates:   make([]float64, n),
	}
	for i := range n {
		r := currentRate(ramp, i, n, rate)
		if !(r > 0) {
			return nil, fmt.Errorf("schedule: non-positive request rate %v at request %d", r, i)
		}
		s.Rates[i] = r
		var d float64
		switch {
		case math.IsInf(r, 1):
			d = 0
		case math.IsInf(burstiness, 1):
			d = 1 / r
		default:
			d = gamma(rng, burstiness, 1/(r*burstiness))
		}
		if i > 0 {
			d += s.Seconds[i-1]
		}
		s.Seconds[i] = d
	}
	if last := s.Seconds[n-1]; ramp == nil && last != 0 {
		f := (float64(n) / rate) / last
		for i := range s.Seconds {
			s.Seconds[i] *= f
		}
	}
	for i, sec := range s.Seconds {
		s.Offsets[i] = time.Duration(math.Round(sec * 1e9))
	}
	return s, nil
}

// checkRampUp validates a ramp-up as vllm bench serve does.
func checkRampUp(ramp *RampUp, rate float64) error {
	if ramp == nil {
		return nil
	}
	switch {
	case ramp.Strategy != "linear" && ramp.Strategy != "exponential":
		return fmt.Errorf("schedule: unknown ramp-up strategy %q (want linear or exponential)", ramp.Strategy)
	case !math.IsInf(rate, 1):
		return errors.New("schedule: a ramp-up controls the request rate; leave the request rate unset")
	case ramp.StartRPS < 0 || ramp.EndRPS < 0:
		return errors.New("schedule: ramp-up start and end RPS must be non-negative")
	case ramp.StartRPS > ramp.EndRPS:
		return errors.New("schedule: ramp-up start RPS must not exceed end RPS")
	case ramp.Strategy == "exponential" && ramp.StartRPS == 0:
		return errors.New("schedule: exponential ramp-up cannot start at 0 RPS")
	}
	return nil
}

// currentRate is the request rate for request i of n (vLLM's
// _get_current_request_rate).
func currentRate(ramp *RampUp, i, n int, rate float64) float64 {
	if ramp == nil {
		return rate
	}
	progress := float64(i) / float64(max(n-1, 1))
	if ramp.Strategy == "exponential" {
		return ramp.StartRPS * math.Pow(ramp.EndRPS/ramp.StartRPS, progress)
	}
	return ramp.StartRPS + (ramp.EndRPS-ramp.StartRPS)*progress
}

// gamma draws from the gamma distribution with the given shape and scale:
// exponential at shape 1, Marsaglia and Tsang's method above, and the
// shape+1 boost below.
func gamma(r *rand.Rand, shape, scale float64) float64 {
	if shape == 1 {
		return r.ExpFloat64() * scale
	}
	if shape < 1 {
		return gamma(r, shape+1, scale) * math.Pow(r.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * scale
		}
	}
}
