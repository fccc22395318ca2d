// Package vllm is a testcontainers module for a real vLLM OpenAI-compatible
// server on CPU: Run starts it, waits for /health through a CPU model load,
// and BaseURL says where to send requests.
//
// With no image given, Run takes the image `make vllm-image` built for this
// CPU (AVX512-VNNI or AVX2, found by tag), else vLLM's x86 CPU release image
// (AVX512 with VNNI and BF16), and says which and why (ChooseImage). Before
// starting any image it checks this machine's CPU flags against what the
// image needs (its org.servegate.cpu-flags label, or the release image's
// requirements) and names the missing ones and the image to use instead,
// rather than letting the server die with an illegal instruction.
package vllm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
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
	// ImageEnv names the environment variable that overrides DefaultImage.
	ImageEnv = "SERVEGATE_IMAGE"
	// DefaultModel is served when no WithModel or WithOfflineModel option
	// is given.
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
	// Image is the image it runs and Reason why it was taken (ChooseImage
	// when Run was given none).
	Image ImageChoice
}

// Run checks the CPU, starts vLLM from img (ChooseImage's when empty) and
// waits until GET /health answers 200. opts mixes this package's Options
// with testcontainers customizers, which are applied after the module's own
// settings. Like testcontainers modules, Run returns the container even with
// an error so that the caller can clean it up. The container carries its
// owner's labels and is removed when the test process is interrupted (see
// dockertest.Owned).
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
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
	choice := ImageChoice{Image: img, Reason: "given"}
	if img == "" {
		var err error
		if choice, err = chooseImage(ctx, o.cpuInfoPath, o.images); err != nil {
			return nil, fmt.Errorf("run vllm: %w", err)
		}
	}
	if err := o.checkCPU(ctx, choice.Image); err != nil {
		return nil, fmt.Errorf("run vllm: %w", err)
	}

	ctr, err := testcontainers.Run(ctx, choice.Image, o.runCustomizers(custom)...)
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr, Model: o.servedName(), Image: choice}
	}
	if tb, ok := o.logger.(testLogger); ok && c != nil {
		tb.Cleanup(func() {
			if tb.Failed() {
				c.dumpLog(tb, "vllm container log (test failed)")
			}
		})
	}
	if err != nil {
		if o.logger != nil && c != nil {
			c.dumpLog(o.logger, "vllm container log (start failed)")
		}
		return c, fmt.Errorf("run vllm: %w", err)
	}
	return c, nil
}

// runCustomizers are what Run applies: the module's settings, then the
// caller's customizers, then the owner labels and lifetime hooks (last, so
// that no option drops them; see dockertest.Owned).
func (o *options) runCustomizers(custom []testcontainers.ContainerCustomizer) []testcontainers.ContainerCustomizer {
	all := append(o.customizers(), custom...)
	return append(all, dockertest.Owned())
}

// checkCPU compares this machine's CPU flags with what img needs.
func (o *options) checkCPU(ctx context.Context, img string) error {
	need := need{o.cpuFlags, "set by WithCPUFlags"}
	if !o.cpuFlagsSet {
		labels, _, err := o.images.labels(ctx, img)
		if err != nil {
			return err
		}
		need = requiredFlags(img, labels, o.goarch)
	}
	if len(need.flags) == 0 {
		return nil
	}
	have, err := readCPUFlags(o.cpuInfoPath)
	if err != nil {
		return err
	}
	missing := MissingFlags(have, need.flags)
	if len(missing) == 0 {
		return nil
	}
	present := func(img string) bool {
		_, ok, err := o.images.labels(ctx, img)
		return ok && err == nil
	}
	return &CPUError{Image: img, Missing: missing, Source: need.source, Suggest: suggestFor(have, present)}
}

// customizers turns the options into the testcontainers request settings.
func (o *options) customizers() []testcontainers.ContainerCustomizer {
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithFiles(o.files...),
		testcontainers.WithEntrypoint("vllm", "serve"),
		testcontainers.WithCmd(o.args()...),
		testcontainers.WithEnv(o.containerEnv()),
		testcontainers.WithExposedPorts(exposedPort),
		testcontainers.WithHostConfigModifier(o.hostConfig),
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
	case o.hubCacheHostDir != "":
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: o.hubCacheHostDir, Target: hubCachePath})
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

// LogTail returns the last lines (up to 200) the container has written
// until now: it reads the log from Docker at the time of the call, so a
// failure shows what the server did up to that failure.
func (c *Container) LogTail(ctx context.Context) (string, error) {
	rc, err := c.Logs(ctx)
	if err != nil {
		return "", fmt.Errorf("vllm log: %w", err)
	}
	defer rc.Close()
	return tailLines(rc, logTailLines)
}

// tailLines returns the last n lines of r.
func tailLines(r io.Reader, n int) (string, error) {
	ring := make([]string, 0, n)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if len(ring) == n {
			ring = append(ring[:0], ring[1:]...)
		}
		ring = append(ring, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return strings.Join(ring, "\n"), fmt.Errorf("vllm log: %w", err)
	}
	return strings.Join(ring, "\n"), nil
}

func (c *Container) dumpLog(to Logger, title string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.LogTail(ctx)
	if err != nil {
		to.Logf("%s: %v", title, err)
	}
	if s != "" {
		to.Logf("%s:\n%s", title, s)
	}
}
