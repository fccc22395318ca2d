package sim

import (
	"context"
	"runtime"
	"time"
)

// A clock is the time the engine's step loop runs on. The real clock (the
// HTTP server's) reads time.Now and sleeps on timers while a step's
// modelled duration passes; the virtual clock (Replay's, virtual.go)
// jumps from one step's end to the next and, when the engine is idle, to
// the next arrival, and sends the replay's requests itself. Scheduling,
// step costs, the KV cache and token delivery are the same code on both:
// only the four methods below differ.
type clock interface {
	// now is the current time.
	now() time.Time
	// arrive submits the requests that have arrived by now. The real
	// clock's requests come through engine.submit from the HTTP
	// handlers, so it does nothing.
	arrive(e *engine)
	// idle waits, when the engine has nothing to run, until work may
	// have come; false ends the step loop.
	idle(ctx context.Context, e *engine) bool
	// sleep lets a step that lasts d pass until its end; false ends the
	// step loop (the step's tokens are not delivered).
	sleep(ctx context.Context, end time.Time, d time.Duration) bool
}

// realClock is wall-clock time: the HTTP server's.
type realClock struct{}

var _ clock = realClock{}

func (realClock) now() time.Time { return time.Now() }

func (realClock) arrive(*engine) {}

// idle waits for a submit (or abort) to wake the engine.
func (realClock) idle(ctx context.Context, e *engine) bool {
	select {
	case <-ctx.Done():
		return false
	case <-e.wake:
		return true
	}
}

// sleep waits on a timer until end. A step that is already over (the loop
// ran late) does not wait; a step of zero length yields the processor so
// that the HTTP handlers run between steps.
func (realClock) sleep(ctx context.Context, end time.Time, d time.Duration) bool {
	if wait := time.Until(end); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	} else if d == 0 {
		runtime.Gosched()
	}
	return ctx.Err() == nil
}
