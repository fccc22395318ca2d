package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/simulator"
	"github.com/servegate/servegate/containers/vllm"
	"github.com/servegate/servegate/internal/cpuset"
	"github.com/servegate/servegate/internal/tokenizer"
)

// startSim runs the simulator image (built from this repository and cached
// by content hash, or target.image) with testcontainers.
func startSim(ctx context.Context, spec scenario.Target, log io.Writer) (*Target, error) {
	dockertest.SetDefaults()
	set, err := simSettings(spec)
	if err != nil {
		return nil, fmt.Errorf("start sim target: %w", err)
	}
	img := spec.Image
	if img == "" {
		if img, err = simulator.Image(ctx, log); err != nil {
			return nil, fmt.Errorf("start sim target: %w", err)
		}
	}
	opts := []testcontainers.ContainerCustomizer{simulator.WithStartupTimeout(spec.StartTimeout.D())}
	opts = append(opts, simProfile(spec.Profile)...)
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		opts = append(opts, simulator.WithKnob(k, set[k]))
	}
	if len(spec.Env) > 0 {
		opts = append(opts, testcontainers.WithEnv(spec.Env))
	}
	pin, cpus := isolation(log)
	if pin != nil {
		opts = append(opts, pin)
	}
	ctr, err := simulator.Run(ctx, img, opts...)
	if err != nil {
		logs := ""
		if ctr != nil {
			if l, lerr := containerLogs(ctr)(context.Background()); lerr == nil && l != "" {
				logs = "\ncontainer log:\n" + l
			}
		}
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("start sim target: %w%s", err, logs)
	}
	base, err := ctr.BaseURL(ctx)
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("start sim target: %w", err)
	}
	served, err := servedModel(ctx, base)
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("start sim target: %w", err)
	}
	image := spec.Image
	if image == "" {
		if info, err := ctr.Inspect(ctx); err == nil && info.Config != nil {
			image = info.Config.Image
		}
	}
	return &Target{
		Kind:            scenario.TargetSim,
		BaseURL:         base,
		Model:           cmp.Or(spec.Model, served),
		ServedModelName: served,
		Image:           image,
		CPUSet:          cpus,
		logs:            containerLogs(ctr),
		close:           func(context.Context) error { return testcontainers.TerminateContainer(ctr) },
	}, nil
}

// profileInContainer is where a sim container finds a profile file.
const profileInContainer = "/servegate-profile.yaml"

// simProfile returns the options that give a simulator container its
// profile: a shipped profile by name, a profile file copied in.
func simProfile(profile string) []testcontainers.ContainerCustomizer {
	switch {
	case profile == "":
		return nil
	case scenario.IsProfileFile(profile):
		return []testcontainers.ContainerCustomizer{
			testcontainers.WithFiles(testcontainers.ContainerFile{HostFilePath: profile, ContainerFilePath: profileInContainer, FileMode: 0o644}),
			simulator.WithProfile(profileInContainer),
		}
	}
	return []testcontainers.ContainerCustomizer{simulator.WithProfile(profile)}
}

// isolation gives a container target and this process disjoint CPU sets
// when the machine has the cores (cpuset.Isolate): it returns the option
// that pins the container, nil when the CPUs stay shared, and the split
// as the benchfmt configuration records it. A process that cannot be
// pinned shares its CPUs and says so on log.
func isolation(log io.Writer) (testcontainers.ContainerCustomizer, string) {
	split, err := cpuset.Isolate()
	if err != nil && log != nil {
		fmt.Fprintf(log, "the target shares the load generator's CPUs: %v\n", err)
	}
	if split.Target == "" {
		return nil, split.String()
	}
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.CpusetCpus = split.Target
	}), split.String()
}

// containerLogs returns a function that reads a container's whole log.
func containerLogs(ctr testcontainers.Container) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		rc, err := ctr.Logs(ctx)
		if err != nil {
			return "", fmt.Errorf("container logs: %w", err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return "", fmt.Errorf("container logs: %w", err)
		}
		return string(b), nil
	}
}

// devModeEnv turns on vLLM's development routes, /reset_prefix_cache
// among them.
const devModeEnv = "VLLM_SERVER_DEV_MODE"

// startVLLM runs a real vLLM CPU image (containers/vllm): target.model
// served offline (vllm.WithOfflineModel: the shipped tiny model when empty,
// a local directory mounted read-only, or a model id from the host's
// Hugging Face cache; anything else fails before a container starts),
// served_model_name, args (vllm serve flags), env, and image (default: the
// image `make vllm-image` built for this CPU, else the release image; log
// gets which and why).
func startVLLM(ctx context.Context, spec scenario.Target, log io.Writer) (*Target, error) {
	dockertest.SetDefaults()
	opts := []testcontainers.ContainerCustomizer{
		vllm.WithOfflineModel(spec.Model, tokenizer.Hub{}),
		vllm.WithStartupTimeout(spec.StartTimeout.D()),
	}
	if spec.ServedModelName != "" {
		opts = append(opts, vllm.WithServedModelName(spec.ServedModelName))
	}
	if len(spec.Args) > 0 {
		opts = append(opts, vllm.WithExtraArgs(spec.Args...))
	}
	// The development routes give the reset of the prefix cache before
	// each run; target.env may turn them off.
	opts = append(opts, vllm.WithEnv(map[string]string{devModeEnv: "1"}))
	if len(spec.Env) > 0 {
		opts = append(opts, vllm.WithEnv(spec.Env))
	}
	pin, cpus := isolation(log)
	if pin != nil {
		opts = append(opts, pin)
	}
	if gpus := withGPUs(spec.GPUs); gpus != nil {
		opts = append(opts, gpus)
	}
	ctr, err := vllm.Run(ctx, spec.Image, opts...)
	if err = gpuError(spec.GPUs, err); errors.Is(err, ErrNoGPURuntime) {
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("start vllm target: %w", err)
	}
	if err != nil {
		logs := ""
		if ctr != nil {
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			if l, lerr := ctr.LogTail(lctx); lerr == nil && l != "" {
				logs = "\ncontainer log (last lines):\n" + l
			}
			cancel()
		}
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("start vllm target: %w%s", err, logs)
	}
	fmt.Fprintf(log, "vllm target: image %s (%s)\n", ctr.Image.Image, ctr.Image.Reason)
	base, err := ctr.BaseURL(ctx)
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("start vllm target: %w", err)
	}
	return &Target{
		Kind:            scenario.TargetVLLM,
		BaseURL:         base,
		Model:           cmp.Or(spec.Model, vllm.TinyModel),
		ServedModelName: ctr.Model,
		Image:           ctr.Image.Image,
		CPUSet:          cpus,
		ServeArgs:       append([]string{}, spec.Args...),
		logs:            ctr.LogTail,
		close:           func(context.Context) error { return testcontainers.TerminateContainer(ctr) },
	}, nil
}
