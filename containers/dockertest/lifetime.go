package dockertest

// Container lifetime: no container servegate starts outlives the process
// that started it.
//
//   - Every container started through Owned (simulator.Run and vllm.Run
//     apply it) carries its owner's labels (LabelOwnerPID and the others)
//     and is recorded in a process-wide registry until it is terminated.
//   - SIGINT and SIGTERM. In a test binary (testing.Testing), the first
//     container start installs a handler. On a signal it removes every
//     container this process owns (the registry, and every container
//     labelled with this process, which covers one caught between create
//     and register), then restores the default action and raises the
//     signal again: the process dies of it, as it would have without
//     servegate (a shell shows status 130 or 143). A second signal during
//     the removal ends the process at once. Other programs (the servegate
//     command) own their signals: they shut down through their context,
//     which terminates their targets; no handler is installed for them.
//   - go test's -timeout panics in a timer goroutine and the process exits
//     with no hook left to run, as it does on SIGKILL or a crash. For these
//     the first container start also runs a watchdog (watchdog.go): this
//     program again, in a process group of its own, ignoring SIGINT,
//     SIGTERM and SIGHUP, blocked reading a pipe whose write end only the
//     owner holds. The kernel closes that end when the owner exits by any
//     cause; the watchdog then removes the owner's labelled containers and
//     exits. It costs one idle process per process that starts containers.
//   - When the watchdog dies too (SIGKILL of the whole tree, a reboot), the
//     next run cleans up: every process's first container start calls
//     RemoveOrphans, which removes the labelled containers whose owner is
//     gone (pid not running, running with another start time, i.e. reused,
//     or an earlier boot). Owners on another host or pid namespace are never
//     judged, so concurrent runs never remove each other's containers.
//   - Ryuk stays off by default even where its image happens to be present:
//     the handler, the watchdog and the next run cover every way a run ends
//     on every machine, so behaviour does not depend on the local image
//     cache, and no privileged container holding the Docker socket is
//     started. TESTCONTAINERS_RYUK_DISABLED=false turns it on (testcontainers'
//     own setting) where the image is available; the labels apply either way.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// removeTimeout bounds the removal of containers on a signal or at start.
const removeTimeout = 10 * time.Second

var registry struct {
	mu  sync.Mutex
	ids map[string]bool
}

var firstStart sync.Once

// Owned is the customizer every servegate container start applies: it
// labels the container with this process (Self().Labels()), records it in
// the process-wide registry until it is terminated, and at the process's
// first container start removes the leftovers of processes that are gone
// (RemoveOrphans), starts the watchdog that removes this process's
// containers when it exits, and, in a test binary, installs the signal
// handler that removes them on SIGINT and SIGTERM.
func Owned() testcontainers.CustomizeRequestOption {
	hooks := testcontainers.ContainerLifecycleHooks{
		PreCreates: []testcontainers.ContainerRequestHook{func(ctx context.Context, _ testcontainers.ContainerRequest) error {
			firstStart.Do(func() { start(ctx) })
			return nil
		}},
		PostCreates: []testcontainers.ContainerHook{func(_ context.Context, c testcontainers.Container) error {
			track(c.GetContainerID(), true)
			return nil
		}},
		PostTerminates: []testcontainers.ContainerHook{func(_ context.Context, c testcontainers.Container) error {
			track(c.GetContainerID(), false)
			return nil
		}},
	}
	return func(req *testcontainers.GenericContainerRequest) error {
		if err := testcontainers.WithLabels(Self().Labels())(req); err != nil {
			return err
		}
		return testcontainers.WithAdditionalLifecycleHooks(hooks)(req)
	}
}

func track(id string, on bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.ids == nil {
		registry.ids = map[string]bool{}
	}
	if on {
		registry.ids[id] = true
	} else {
		delete(registry.ids, id)
	}
}

func tracked() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	ids := make([]string, 0, len(registry.ids))
	for id := range registry.ids {
		ids = append(ids, id)
	}
	return ids
}

// start runs once, before this process creates its first container.
func start(ctx context.Context) {
	if testing.Testing() {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM) // before the container exists
		go handleSignals(ch)
	}
	if err := startWatchdog(); err != nil {
		fmt.Fprintf(os.Stderr, "servegate: %v; the containers of this process are removed by the next run if it dies\n", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	if n, err := RemoveOrphans(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "servegate: removing leftover containers: %v\n", err)
	} else if n > 0 {
		fmt.Fprintf(os.Stderr, "servegate: removed %d leftover container(s) of processes that are gone\n", n)
	}
}

// handleSignals waits for SIGINT or SIGTERM on ch, removes this process's
// containers and dies of the signal.
func handleSignals(ch chan os.Signal) {
	sig := <-ch
	done := make(chan int, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
		defer cancel()
		n, err := RemoveOwn(ctx)
		if err != nil {
			fmt.Fprintf(os.Stderr, "servegate: %v: removing containers: %v\n", sig, err)
		}
		done <- n
	}()
	select {
	case n := <-done:
		fmt.Fprintf(os.Stderr, "servegate: %v: removed %d container(s)\n", sig, n)
	case sig = <-ch: // a second signal: do not wait
	}
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(sig)
	}
	time.Sleep(time.Second) // the signal is delivered asynchronously
	code := 1
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	os.Exit(code)
}

// RemoveOwn removes every container this process owns: those in the
// registry and those labelled with this process. It returns how many it
// removed.
func RemoveOwn(ctx context.Context) (int, error) {
	me := Self()
	return remove(ctx, tracked(), func(o Owner) bool { return o == me })
}

// RemoveOrphans removes the containers labelled as servegate's whose owner
// is gone (see Owner.Gone): the leftovers of a process killed by go test's
// -timeout, SIGKILL or a crash. The first container start of every process
// calls it; it returns how many it removed.
func RemoveOrphans(ctx context.Context) (int, error) {
	me := Self()
	return remove(ctx, nil, me.Gone)
}

// remove removes the containers ids and the labelled containers whose owner
// pick selects.
func remove(ctx context.Context, ids []string, pick func(Owner) bool) (int, error) {
	SetDefaults()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return 0, fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelOwnerPID),
	})
	if err != nil {
		return 0, fmt.Errorf("list containers: %w", err)
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for _, c := range list.Items {
		if o, ok := ownerFromLabels(c.Labels); ok && pick(o) {
			want[c.ID] = true
		}
	}
	n := 0
	var errs []error
	for id := range want {
		_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			n++
			track(id, false)
		case cerrdefs.IsNotFound(err):
			track(id, false)
		default:
			errs = append(errs, fmt.Errorf("remove container %.12s: %w", id, err))
		}
	}
	return n, errors.Join(errs...)
}
