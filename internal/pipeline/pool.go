package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
)

// An Owner holds a target: a test or benchmark (testing.TB has these
// methods). The target is released when the owner's cleanups run.
type Owner interface {
	Helper()
	Cleanup(func())
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

// A Pool starts each distinct target once and shares it among the
// scenarios that use the same one.
type Pool struct {
	mu      sync.Mutex
	entries map[string]*entry
	// keep holds targets until CloseAll (benchtest.Main); otherwise a
	// target is stopped when the last test holding it ends.
	keep bool
}

type entry struct {
	once   sync.Once
	target *Target
	err    error
	refs   int
}

// key identifies a target: every field of its spec but the start timeout.
func key(spec scenario.Target) string {
	spec.StartTimeout = 0
	b, _ := json.Marshal(spec)
	return string(b)
}

// Acquire returns the running target for spec, starting it on first use.
// The reference is released when owner ends; the target stops when no
// test holds it any more, unless Main keeps targets for the whole process.
func (p *Pool) Acquire(ctx context.Context, owner Owner, spec scenario.Target) (*Target, error) {
	k := key(spec)
	p.mu.Lock()
	e, ok := p.entries[k]
	if !ok {
		e = &entry{}
		p.entries[k] = e
	}
	e.refs++
	p.mu.Unlock()
	owner.Cleanup(func() { p.release(owner, k, e) })

	e.once.Do(func() { e.target, e.err = StartTarget(ctx, spec, TestLog{owner}) })
	return e.target, e.err
}

// TestLog writes a target's start messages (which image, a build) to the
// log of the test that starts it.
type TestLog struct{ TB Owner }

func (l TestLog) Write(p []byte) (int, error) {
	l.TB.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (p *Pool) release(tb Owner, k string, e *entry) {
	p.mu.Lock()
	e.refs--
	last := e.refs == 0 && !p.keep
	if last {
		delete(p.entries, k)
	}
	p.mu.Unlock()
	if last && e.target != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.target.Close(ctx); err != nil {
			tb.Errorf("stop %s target: %v", e.target.Kind, err)
		}
	}
}

// CloseAll stops every target of the pool.
func (p *Pool) CloseAll() error {
	p.mu.Lock()
	entries := p.entries
	p.entries = map[string]*entry{}
	p.mu.Unlock()
	var errs []error
	for _, e := range entries {
		if e.target == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := e.target.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s target: %w", e.target.Kind, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

// Shared is the process's pool: benchtest's Run, RunDir, Bench and
// BenchDir take their targets from it.
var Shared = &Pool{entries: map[string]*entry{}}

// Keep holds every target until CloseAll, across tests and -count
// repetitions (benchtest.Main).
func (p *Pool) Keep() {
	p.mu.Lock()
	p.keep = true
	p.mu.Unlock()
}
