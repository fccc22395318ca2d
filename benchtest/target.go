package benchtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servegate/servegate/benchtest/scenario"
)

// A Target is a running server under test.
type Target struct {
	// Kind is sim, inproc, vllm or url.
	Kind string
	// BaseURL is where requests go (http://host:port).
	BaseURL string
	// Model is the model id results name.
	Model string
	// ServedModelName is the model name requests send.
	ServedModelName string
	// Image is the container image, "" for inproc and url targets.
	Image string
	// CPUSet says how the CPUs are shared with the load generator, as
	// the benchfmt configuration records it: "target=0-1 client=2-3" when
	// a container target and this process got disjoint CPU sets
	// (internal/cpuset), else "shared".
	CPUSet string
	// ServeArgs are the flags servegate started the server with, where
	// they configure it (a vllm target's `vllm serve` flags: --max-num-seqs
	// and the like); the result JSON's server_config keeps them for
	// servegate sim calibrate. nil for other kinds.
	ServeArgs []string

	logs  func(ctx context.Context) (string, error)
	close func(ctx context.Context) error
	// logShown is set once a failed test has shown the target's log, so
	// the other tests sharing the target do not repeat it.
	logShown atomic.Bool
}

// Logs returns the server's log ("" when the target has none).
func (t *Target) Logs(ctx context.Context) (string, error) {
	if t.logs == nil {
		return "", nil
	}
	return t.logs(ctx)
}

// Close stops the server (a no-op for url targets).
func (t *Target) Close(ctx context.Context) error {
	if t.close == nil {
		return nil
	}
	return t.close(ctx)
}

// starters start each target kind of scenario.TargetKinds (targets.go,
// targets_container.go).
var starters = map[string]func(ctx context.Context, spec scenario.Target, log io.Writer) (*Target, error){
	scenario.TargetURL:       startURL,
	scenario.TargetInproc:    startInproc,
	scenario.TargetSim:       startSim,
	scenario.TargetVLLM:      startVLLM,
	scenario.TargetContainer: startContainer,
}

// StartTarget starts the server spec describes (or, for a url target,
// checks which model it serves), within spec.StartTimeout (default
// scenario.DefaultStartTimeout). log receives progress lines such as an
// image build's; nil discards them. Close the Target when done.
func StartTarget(ctx context.Context, spec scenario.Target, log io.Writer) (*Target, error) {
	start, ok := starters[spec.Kind]
	if !ok {
		return nil, fmt.Errorf("start %s target: unknown kind (kinds: %v)", spec.Kind, scenario.TargetKinds)
	}
	if log == nil {
		log = io.Discard
	}
	if spec.StartTimeout <= 0 {
		spec.StartTimeout = scenario.Duration(scenario.DefaultStartTimeout)
	}
	sctx, cancel := context.WithTimeout(ctx, spec.StartTimeout.D())
	defer cancel()
	return start(sctx, spec, log)
}

// A pool starts each distinct target once and shares it among the
// scenarios that use the same one.
type pool struct {
	mu      sync.Mutex
	entries map[string]*entry
	// keep holds targets until closeAll (benchtest.Main); otherwise a
	// target is stopped when the last test holding it ends.
	keep bool
}

type entry struct {
	once   sync.Once
	target *Target
	err    error
	refs   int
}

var shared = &pool{entries: map[string]*entry{}}

// key identifies a target: every field of its spec but the start timeout.
func key(spec scenario.Target) string {
	spec.StartTimeout = 0
	b, _ := json.Marshal(spec)
	return string(b)
}

// acquire returns the running target for spec, starting it on first use.
// The reference is released when owner ends; the target stops when no
// test holds it any more, unless Main keeps targets for the whole process.
func (p *pool) acquire(ctx context.Context, owner testing.TB, spec scenario.Target) (*Target, error) {
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

	e.once.Do(func() { e.target, e.err = StartTarget(ctx, spec, testLog{owner}) })
	return e.target, e.err
}

// testLog writes a target's start messages (which image, a build) to the
// log of the test that starts it.
type testLog struct{ tb testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.tb.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (p *pool) release(tb testing.TB, k string, e *entry) {
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

// closeAll stops every target of the pool.
func (p *pool) closeAll() error {
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

// Main runs the tests and benchmarks of a package with targets shared by
// all of them (across -count repetitions too) and stopped at the end. Use
// it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(benchtest.Main(m)) }
//
// Without it a target lives as long as the test or benchmark that called
// Run, RunDir, Bench or BenchDir.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.keep = true
	shared.mu.Unlock()
	code := m.Run()
	if err := shared.closeAll(); err != nil {
		fmt.Println("benchtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
