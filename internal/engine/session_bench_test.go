package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/servegate/servegate/internal/childserver"
	"github.com/servegate/servegate/internal/conversation"
	"github.com/servegate/servegate/internal/metrics"
)

// BenchmarkSessions drives 10,000 sessions at once from this process
// against the simulator in a child process: every session sends its first
// turn, then thinks for 30 s. Once every first turn is answered (all
// sessions idle, between turns) it measures this process's heap and
// stacks after a GC, and reports what each idle session holds beyond the
// text of its history (the user turns, which the conversations held
// before the run, and the answers, whose text the run allocated):
//
//	B/idle-session        everything the run added, per session: the
//	                      session, its timer, random source and message
//	                      slice, its first record, and the client's idle
//	                      connections (shared, divided among the sessions)
//	B/idle-session-state  the same without the record (the Record struct,
//	                      its ITL slice and request id), which any run keeps
//	                      per request, sessions or not
//	goroutines/session    goroutines beyond the ones before the run
//
// Measure it alone (flock /work/quiet.lock):
//
//	go test -run '^$' -bench '^BenchmarkSessions$' -benchtime 1x ./internal/engine
func BenchmarkSessions(b *testing.B) {
	url := childserver.Start(b, "TestSimServer", "sessions")
	const n = 10_000
	var perSession, perState, gPerSession float64
	for b.Loop() {
		cs := make([]conversation.Conversation, n)
		for i := range cs {
			cs[i] = conversation.Conversation{ID: fmt.Sprintf("c%05d", i), Turns: []conversation.Turn{
				{User: fmt.Sprintf("first question of session %d, about nothing in particular", i), UserTokens: 12, MaxTokens: 8},
				{User: fmt.Sprintf("second question of session %d", i), UserTokens: 6, MaxTokens: 8},
			}}
		}
		ctx, cancel := context.WithCancel(b.Context())
		firsts := make(chan struct{})
		var once atomic.Bool
		cfg := Config{BaseURL: url, Backend: "openai-chat", Model: "servegate/sim-instant", IgnoreEOS: true,
			Progress: func(done, _ int) {
				if done >= n && once.CompareAndSwap(false, true) {
					close(firsts)
				}
			}}
		before, gBefore := heapAndStacks()
		type out struct {
			res *Result
			err error
		}
		ran := make(chan out, 1)
		go func() {
			res, err := RunSessions(ctx, cfg, Sessions{Conversations: cs, ThinkTime: constant(30)})
			ran <- out{res, err}
		}()
		select {
		case <-firsts:
		case o := <-ran:
			cancel()
			b.Fatalf("the run ended before every first turn: %v", o.err)
		case <-time.After(10 * time.Minute):
			cancel()
			b.Fatal("first turns not done in 10 minutes")
		}
		time.Sleep(200 * time.Millisecond) // the last answers' goroutines end
		idle, gIdle := heapAndStacks()
		cancel()
		o := <-ran
		if o.err != nil {
			b.Fatal(o.err)
		}
		var texts, records int64
		for i := range o.res.Records {
			r := &o.res.Records[i]
			if r.Turn != 0 || r.Unsent {
				continue
			}
			if !r.Success {
				b.Fatalf("%s: %s", r.RequestID, r.Error)
			}
			texts += int64(len(r.GeneratedText))
			records += int64(unsafe.Sizeof(metrics.Record{})) + int64(cap(r.ITL))*8 + int64(len(r.RequestID))
		}
		perSession = float64(idle-before-texts) / n
		perState = float64(idle-before-texts-records) / n
		gPerSession = float64(gIdle-gBefore) / n
	}
	b.ReportMetric(perSession, "B/idle-session")
	b.ReportMetric(perState, "B/idle-session-state")
	b.ReportMetric(gPerSession, "goroutines/session")
	b.ReportMetric(0, "ns/op")
}

// heapAndStacks is the bytes of live heap objects and goroutine stacks
// after a GC, and the goroutine count.
func heapAndStacks() (int64, int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse), runtime.NumGoroutine()
}
