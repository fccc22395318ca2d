// Package generic runs any OpenAI-compatible server as a target: an image by
// name, or one built from a Dockerfile and cached by the content hash of its
// build context, optionally in front of simulator backends.
//
// It is for teams who build what sits in front of an inference server —
// gateways, routers, schedulers, autoscalers — and want `go test` to measure
// their component against realistic backends:
//
//	ctr, err := generic.Run(ctx, generic.Spec{
//		Build:    &generic.Build{Context: "examples/router"},
//		Port:     8080,
//		Backends: []generic.Backend{{Kind: "sim", Replicas: 2}},
//	})
//	testcontainers.CleanupContainer(t, ctr)
//	require.NoError(t, err)
//	base, err := ctr.BaseURL(ctx) // the component, from the host
//
// The backends are simulator containers (containers/simulator) on a
// testcontainers network of their own, with the stable aliases sim-0,
// sim-1, ...; the target container joins that network and gets their URLs
// in SERVEGATE_BACKENDS (http://sim-0:8000,http://sim-1:8000). Each backend
// stays reachable from the host for ground-truth checks (BackendURLs, Truth).
//
// Errors say what went wrong in one message: a missing Dockerfile names the
// path, a failed build carries the tail of the build log, and a server that
// exits or never answers its wait path carries the tail of its container log.
package generic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/simulator"
)

// EnvBackends is the variable the target container finds its backends'
// URLs in, comma-separated, in replica order.
const EnvBackends = "SERVEGATE_BACKENDS"

// Defaults of a Spec's zero fields.
const (
	DefaultPort        = 8000
	DefaultWaitPath    = "/health"
	DefaultWaitTimeout = 2 * time.Minute
)

// A Spec says which container to run, mirroring a scenario's
//
//	target: {kind: container, image: NAME | build: {...}, port, env, cmd, wait: {path, timeout}}
//	backends: [{kind: sim, replicas: N, ...}]
//
// Exactly one of Image and Build is set.
type Spec struct {
	// Image is an image the Docker daemon has (or can pull).
	Image string
	// Build builds the image from a Dockerfile instead.
	Build *Build
	// Port is the container port the server listens on. Default 8000.
	Port int
	// Env is the container's environment, besides SERVEGATE_BACKENDS.
	Env map[string]string
	// Cmd replaces the image's command (the arguments after its entrypoint).
	Cmd []string
	// Wait is how Run decides that the server is ready.
	Wait Wait
	// Backends are started first, on a network the target joins.
	Backends []Backend
	// Options are further options of the target's container, such as
	// a host config modifier that requests GPUs.
	Options []testcontainers.ContainerCustomizer
}

// A Build is a docker build of the target's image.
type Build struct {
	// Context is the build context directory; a relative path is relative
	// to the working directory.
	Context string
	// Dockerfile is the Dockerfile's path inside Context. Default
	// "Dockerfile".
	Dockerfile string
	// Args are the build arguments (ARG).
	Args map[string]string
}

// Wait says when the target is ready: a GET of Path on Port answers 2xx.
type Wait struct {
	// Path is the HTTP path polled. Default /health.
	Path string
	// Timeout bounds the wait after the container started. Default 2m.
	Timeout time.Duration
}

// A Backend is a group of identical servers behind the target.
type Backend struct {
	// Kind is the server: "sim" (the default) is servegate's simulator.
	Kind string
	// Replicas is how many to start, 1 to MaxReplicas. Default 1.
	Replicas int
	// Profile is the simulator's latency profile; empty is its default.
	Profile string
	// Knobs are simulator knobs by YAML key (max_num_seqs: "8").
	Knobs map[string]string
	// Image is the simulator image. Empty builds one from servegate's
	// sources with simulator.Image.
	Image string
	// Options are further simulator options (simulator.WithSlowdown, ...).
	Options []testcontainers.ContainerCustomizer
}

// MaxReplicas bounds Backend.Replicas, so that a typo cannot start
// hundreds of containers.
const MaxReplicas = 16

// A Container is a running target with its backends.
type Container struct {
	// Container is the target; nil when it never started.
	testcontainers.Container
	// Image is the target's image (the built tag when Spec.Build was set).
	Image string
	// Backends are the backend servers in replica order: Backends[i] has
	// the alias Aliases[i] on the network.
	Backends []*simulator.Container
	// Aliases are the backends' names on the network (sim-0, sim-1, ...).
	Aliases []string

	port    string
	network *testcontainers.DockerNetwork
}

// Run starts spec's backends, builds the target's image when spec.Build is
// set (or finds it by content hash), starts the target and waits until it
// answers. On error it returns the partial container with the error, so
// callers clean up with testcontainers.CleanupContainer (or Terminate)
// before checking the error. It sets the hermetic testcontainers defaults
// (see dockertest.SetDefaults).
func Run(ctx context.Context, spec Spec) (*Container, error) {
	spec, err := withDefaults(spec)
	if err != nil {
		return nil, fmt.Errorf("run container target: %w", err)
	}
	dockertest.SetDefaults()
	c := &Container{port: strconv.Itoa(spec.Port) + "/tcp"}
	if err := c.startBackends(ctx, spec.Backends); err != nil {
		return c, fmt.Errorf("run container target: %w", err)
	}
	c.Image = spec.Image
	if spec.Build != nil {
		if c.Image, err = Image(ctx, *spec.Build, nil); err != nil {
			return c, fmt.Errorf("run container target: %w", err)
		}
	}
	if err := c.startTarget(ctx, spec); err != nil {
		return c, fmt.Errorf("run container target %s: %w", c.Image, err)
	}
	return c, nil
}

// withDefaults checks spec and fills its zero fields.
func withDefaults(spec Spec) (Spec, error) {
	switch {
	case spec.Image == "" && spec.Build == nil:
		return spec, errors.New("give an image or a build")
	case spec.Image != "" && spec.Build != nil:
		return spec, fmt.Errorf("give an image (%s) or a build (%s), not both", spec.Image, spec.Build.Context)
	case spec.Build != nil && spec.Build.Context == "":
		return spec, errors.New("build: context is empty")
	case spec.Port < 0 || spec.Port > 65535:
		return spec, fmt.Errorf("port %d: want 1 to 65535", spec.Port)
	case spec.Wait.Timeout < 0:
		return spec, fmt.Errorf("wait timeout %v: want > 0", spec.Wait.Timeout)
	}
	if spec.Port == 0 {
		spec.Port = DefaultPort
	}
	if spec.Wait.Path == "" {
		spec.Wait.Path = DefaultWaitPath
	}
	if !strings.HasPrefix(spec.Wait.Path, "/") {
		return spec, fmt.Errorf("wait path %q: want an absolute path such as /health", spec.Wait.Path)
	}
	if spec.Wait.Timeout == 0 {
		spec.Wait.Timeout = DefaultWaitTimeout
	}
	spec.Backends = append([]Backend(nil), spec.Backends...) // filled below; the caller's stays
	if _, ok := spec.Env[EnvBackends]; ok && len(spec.Backends) > 0 {
		return spec, fmt.Errorf("env %s is set by the backends; remove it", EnvBackends)
	}
	for i, b := range spec.Backends {
		if b.Kind != "" && b.Kind != "sim" {
			return spec, fmt.Errorf("backend %d: kind %q: the one backend kind is sim", i, b.Kind)
		}
		if b.Replicas < 0 || b.Replicas > MaxReplicas {
			return spec, fmt.Errorf("backend %d: replicas %d: want 1 to %d", i, b.Replicas, MaxReplicas)
		}
		if b.Replicas == 0 {
			spec.Backends[i].Replicas = 1
		}
	}
	return spec, nil
}

// startTarget starts the target container (on the backends' network when
// there is one) and waits for it.
func (c *Container) startTarget(ctx context.Context, spec Spec) error {
	env := map[string]string{}
	for k, v := range spec.Env {
		env[k] = v
	}
	opts := []testcontainers.ContainerCustomizer{testcontainers.WithExposedPorts(c.port)}
	if c.network != nil {
		urls := make([]string, len(c.Aliases))
		for i, a := range c.Aliases {
			urls[i] = "http://" + a + ":" + strings.TrimSuffix(simulator.Port, "/tcp")
		}
		env[EnvBackends] = strings.Join(urls, ",")
		opts = append(opts, network.WithNetwork([]string{"target"}, c.network))
	}
	if len(env) > 0 {
		opts = append(opts, testcontainers.WithEnv(env))
	}
	if len(spec.Cmd) > 0 {
		opts = append(opts, testcontainers.WithCmd(spec.Cmd...))
	}
	opts = append(opts, spec.Options...)
	opts = append(opts, dockertest.Owned()) // removed with this process, like every servegate container
	ctr, err := testcontainers.Run(ctx, c.Image, opts...)
	if ctr != nil {
		c.Container = ctr
	}
	if err != nil {
		return withLogTail(ctx, ctr, err)
	}
	return c.wait(ctx, spec.Wait)
}

// BaseURL is the target's address from the host: http://host:port.
func (c *Container) BaseURL(ctx context.Context) (string, error) {
	if c.Container == nil {
		return "", errors.New("container target base url: not started")
	}
	u, err := c.PortEndpoint(ctx, c.port, "http")
	if err != nil {
		return "", fmt.Errorf("container target base url: %w", err)
	}
	return u, nil
}

// BackendURLs are the backends' addresses from the host, in replica order.
func (c *Container) BackendURLs(ctx context.Context) ([]string, error) {
	urls := make([]string, len(c.Backends))
	for i, b := range c.Backends {
		u, err := b.BaseURL(ctx)
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", c.Aliases[i], err)
		}
		urls[i] = u
	}
	return urls, nil
}

// Truth fetches one request's ground truth from whichever backend served
// it (the request id travels in X-Request-Id through the target).
func (c *Container) Truth(ctx context.Context, id string) (simulator.Truth, error) {
	urls, err := c.BackendURLs(ctx)
	if err != nil {
		return simulator.Truth{}, err
	}
	var errs []error
	for i, u := range urls {
		t, err := simulator.FetchTruth(ctx, http.DefaultClient, u, id)
		if err == nil {
			return t, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", c.Aliases[i], err))
	}
	return simulator.Truth{}, fmt.Errorf("no backend knows request %s: %w", id, errors.Join(errs...))
}

// Terminate stops the target, then its backends, then removes their
// network. It implements testcontainers.Container's Terminate, so
// testcontainers.CleanupContainer stops everything.
func (c *Container) Terminate(ctx context.Context, opts ...testcontainers.TerminateOption) error {
	var errs []error
	if c.Container != nil {
		if err := c.Container.Terminate(ctx, opts...); err != nil {
			errs = append(errs, fmt.Errorf("target: %w", err))
		}
	}
	for i, b := range c.Backends {
		if b == nil {
			continue
		}
		if err := b.Terminate(ctx, opts...); err != nil {
			errs = append(errs, fmt.Errorf("backend %s: %w", c.Aliases[i], err))
		}
	}
	if c.network != nil {
		if err := c.network.Remove(ctx); err != nil {
			errs = append(errs, fmt.Errorf("network: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("terminate container target: %w", err)
	}
	return nil
}
