package engine

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/servegate/servegate/internal/client"
	"github.com/servegate/servegate/internal/metrics"
)

// defaultSpinWindow is how long before a send time the dispatcher stops
// sleeping on a Go timer and waits precisely instead. Go timers can wake up
// to a millisecond late (the runtime's poller sleeps in whole
// milliseconds), so the last stretch is a series of short thread sleeps
// (threadSleep: a raw nanosleep, within the kernel's timer slack and
// without giving up the processor) followed by a short yielding spin over
// the final spinTail. Where no thread sleep is available the whole window
// is spun.
const defaultSpinWindow = 1500 * time.Microsecond

// spinTail is the part of the window always spent polling the clock.
const spinTail = 100 * time.Microsecond

// A dispatcher sends the requests of a run at their scheduled times.
type dispatcher struct {
	cfg     *Config
	client  *client.Client
	reqs    []client.Request
	offsets []time.Duration
	rates   []float64
	spin    time.Duration

	mu   sync.Mutex
	done int
}

// run dispatches every request open-loop: request i is released at its
// offset from the start of the run whether or not earlier ones have
// finished, then waits for a concurrency slot if there is a limit. It fills
// res.Records, Duration, Start and RPSChanges.
//
// Waiting for a slot happens in this loop rather than in one goroutine per
// request, so a long run under a concurrency limit holds at most that many
// request goroutines. The queue is first come, first served either way; a
// request that fell due while the loop waited for a slot counts as
// released at its scheduled time, which is what a goroutine per request
// would have recorded. Each record's Free says when the request could
// have gone (its time had come and a slot was free), so that the
// generator's own lateness (Start minus Free) is told apart from waiting
// for a slot.
func (d *dispatcher) run(ctx context.Context, res *Result) {
	n := len(d.reqs)
	res.Records = make([]metrics.Record, n)
	// A concurrency slot is a token holding when it was last released
	// (0 for a slot never taken), so that a request that waited for one
	// knows when it became free to go (Record.Free).
	var slots chan time.Duration
	if n := d.cfg.MaxConcurrency; n > 0 {
		slots = make(chan time.Duration, n)
		for range n {
			slots <- 0
		}
	}
	ramp := d.cfg.RampUp
	lastRPS := -1
	epoch := time.Now()
	d.client.Epoch = epoch
	res.Start = epoch
	if ramp != nil {
		lastRPS = int(ramp.StartRPS)
		res.RPSChanges = append(res.RPSChanges, metrics.RPSChange{RPS: lastRPS, Timestamp: isoformat(time.Now())})
	}
	var wg sync.WaitGroup
	var unblocked time.Duration // when the loop last stopped waiting for a slot
	stop := func(from int, why string, dispatched time.Duration) {
		for j := from; j < n; j++ {
			res.Records[j] = d.unsent(j, why)
		}
		if dispatched >= 0 {
			res.Records[from].Dispatched = dispatched
		}
	}
	for i := range d.reqs {
		// Build the payload while waiting, not after the send time.
		prep := d.client.Prepare(d.reqs[i])
		if err := sleepUntil(ctx, epoch.Add(d.offsets[i]), d.spin); err != nil {
			stop(i, "not sent: run stopped before its scheduled time", -1)
			break
		}
		dispatched := time.Since(epoch)
		if d.offsets[i] < unblocked {
			dispatched = d.offsets[i]
		}
		if ramp != nil {
			if cur := int(d.rates[i]); cur > lastRPS {
				ts := isoformat(epoch.Add(dispatched))
				for v := lastRPS + 1; v <= cur; v++ {
					res.RPSChanges = append(res.RPSChanges, metrics.RPSChange{RPS: v, Timestamp: ts})
				}
				lastRPS = cur
			}
		}
		free := d.offsets[i]
		if slots != nil {
			var released time.Duration
			select {
			case released = <-slots:
			default:
				select {
				case released = <-slots:
					unblocked = time.Since(epoch)
				case <-ctx.Done():
					stop(i, "not sent: run stopped while waiting for a concurrency slot", dispatched)
				}
			}
			if ctx.Err() != nil {
				if !res.Records[i].Unsent {
					slots <- released
					stop(i, "not sent: run stopped", dispatched)
				}
				break
			}
			free = max(free, released)
		}
		wg.Go(func() {
			if slots != nil {
				defer func() { slots <- time.Since(epoch) }()
			}
			d.send(ctx, i, dispatched, free, &prep, &res.Records[i])
			d.progress()
		})
		// The new goroutine waits in this processor's run queue; yield so
		// it sends now rather than when this loop next blocks (which, in
		// the precise wait, may be the next send time).
		runtime.Gosched()
	}
	wg.Wait()
	res.Duration = time.Since(epoch)
}

// send sends request i (prepared as prep), released at dispatched and
// free to go at free, once it holds a concurrency slot, and writes its
// record to rec. Records and requests go by pointer: this frame is under
// every open stream's, and a stack that stays within 4 KiB is half the
// memory of one that grows to 8.
func (d *dispatcher) send(ctx context.Context, i int, dispatched, free time.Duration, prep *client.Prepared, rec *metrics.Record) {
	if ctx.Err() != nil {
		d.stopped(i, rec)
	} else {
		d.client.DoPrepared(ctx, prep, rec)
		rec.Scheduled = d.offsets[i]
	}
	rec.Dispatched = dispatched
	rec.Free = free
}

// stopped writes the record of request i when the run stopped before it
// was sent. (A function of its own, kept out of send's frame.)
//
//go:noinline
func (d *dispatcher) stopped(i int, rec *metrics.Record) {
	*rec = d.unsent(i, "not sent: run stopped")
}

// unsent is the record of request i when the run stopped before sending it.
func (d *dispatcher) unsent(i int, why string) metrics.Record {
	r := d.reqs[i]
	return metrics.Record{
		RequestID: r.RequestID,
		Scheduled: d.offsets[i],
		Free:      d.offsets[i],
		PromptLen: r.PromptLen,
		Unsent:    true,
		Failure:   metrics.FailureCanceled,
		Error:     why,
	}
}

func (d *dispatcher) progress() {
	if d.cfg.Progress == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done++
	d.cfg.Progress(d.done, len(d.reqs))
}

// sleepUntil waits until t on the monotonic clock: on a Go timer until
// window before t, then precisely (preciseWait). It returns the context's
// error if ctx ends first; the precise stretch, at most window long, is not
// interrupted.
func sleepUntil(ctx context.Context, t time.Time, window time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if wait := time.Until(t) - window; wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
	}
	if window > 0 {
		preciseWait(t)
	}
	return nil
}

// preciseWait waits until t with a thread sleep (where threadSleep can)
// up to spinTail before it, then by yielding in a loop.
func preciseWait(t time.Time) {
	for {
		rem := time.Until(t)
		if rem <= 0 {
			return
		}
		if rem <= spinTail || !threadSleep(rem-spinTail) {
			break
		}
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
}

// isoformat formats t like Python's datetime.now().isoformat(): local
// time, microseconds, no zone.
func isoformat(t time.Time) string {
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02T15:04:05.000000")
}
