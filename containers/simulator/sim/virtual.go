package sim

import (
	"context"
	"errors"
	"time"
)

// This file is the contract of the virtual clock (issue #30): the same
// engine that serves HTTP in real time replays a list of requests in
// simulated time, orders of magnitude faster. Calibration (servegate sim
// calibrate) and capacity prediction (servegate sweep --virtual) call
// Replay; neither re-implements the engine.
//
// NOT BUILT YET: Replay returns ErrVirtualNotBuilt until the engine runs
// on a clock (branch "virtual").

// VirtualRequest is one request of a replay.
type VirtualRequest struct {
	// Arrival is when the client would send the request, from the start
	// of the replay. With ReplayOptions.MaxConcurrency the request is
	// sent at Arrival or when a slot frees, whichever is later (as the
	// benchmark engine's semaphore does).
	Arrival time.Duration
	// Prompt is the prompt's token ids. Their content matters only for
	// the prefix cache; Replay does not keep the slice.
	Prompt []int
	// MaxTokens is the output length in tokens (the benchmark's requests
	// ignore EOS); at least 1.
	MaxTokens int
}

// VirtualResult is one request's outcome in simulated time.
type VirtualResult struct {
	// Sent is when the request reached the engine, from the start of the
	// replay (Arrival, or later under a concurrency limit).
	Sent time.Duration
	// TokenTimes are the times of each output token, from Sent: the
	// first is the TTFT, the differences are the ITLs.
	TokenTimes []time.Duration
	// CachedTokens are the prompt tokens found in the prefix cache.
	CachedTokens int
	// Preemptions counts the times the request was preempted.
	Preemptions int
}

// ReplayOptions shape the client side of a replay.
type ReplayOptions struct {
	// MaxConcurrency caps the requests in flight; 0 = no cap.
	MaxConcurrency int
	// MaxSimulated stops the replay after this much simulated time; 0 =
	// run until every request finished. A request not finished by then
	// has a nil TokenTimes or fewer than its MaxTokens.
	MaxSimulated time.Duration
}

// ErrVirtualNotBuilt is what Replay returns until the virtual clock lands.
var ErrVirtualNotBuilt = errors.New("sim: virtual clock not built yet")

// Replay runs reqs through the engine of p in simulated time and returns
// one result per request, in the order of reqs. The step durations are
// those of the real clock (p's cost model, slowdown and seeded jitter);
// nothing sleeps. It stops early when ctx is done.
func Replay(ctx context.Context, p Params, reqs []VirtualRequest, opt ReplayOptions) ([]VirtualResult, error) {
	return nil, ErrVirtualNotBuilt
}
