package benchtest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/simulator"
	"github.com/servegate/servegate/containers/vllm"
)

// startSim runs the simulator image (built from this repository and cached
// by content hash, or target.image) with testcontainers.
func startSim(ctx context.Context, spec scenario.Target, log io.Writer) (*Target, error) {
	dockertest.SetDefaults()
	set, err := simSettings(spec)
	if err != nil {
		return nil, fmt.Errorf("start sim target: %w", err)
	}
	opts := []testcontainers.ContainerCustomizer{simulator.WithStartupTimeout(spec.StartTimeout.D()), simulator.WithBuildLog(log)}
	if spec.Profile != "" {
		opts = append(opts, simulator.WithProfile(spec.Profile))
	}
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
	if spec.Image != "" {
		opts = append(opts, testcontainers.WithImage(spec.Image))
	}
	ctr, err := simulator.Run(ctx, opts...)
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
		logs:            containerLogs(ctr),
		close:           func(context.Context) error { return testcontainers.TerminateContainer(ctr) },
	}, nil
}

// hfHome is the host's Hugging Face home (the directory holding hub/), or
// "" when there is none yet.
func hfHome() string {
	dir := os.Getenv("HF_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "huggingface")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return dir
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

// startVLLM runs a real vLLM CPU image (containers/vllm): target.model,
// served_model_name, args (vllm serve flags), env, image (default the
// module's pinned image, or SERVEGATE_IMAGE), with the host's Hugging Face
// cache mounted so that a model is downloaded once, not on every run.
func startVLLM(ctx context.Context, spec scenario.Target, _ io.Writer) (*Target, error) {
	dockertest.SetDefaults()
	opts := []testcontainers.ContainerCustomizer{
		vllm.WithModel(spec.Model),
		vllm.WithStartupTimeout(spec.StartTimeout.D()),
	}
	if dir := hfHome(); dir != "" {
		opts = append(opts, vllm.WithHFCacheDir(dir))
	}
	if spec.ServedModelName != "" {
		opts = append(opts, vllm.WithServedModelName(spec.ServedModelName))
	}
	if len(spec.Args) > 0 {
		opts = append(opts, vllm.WithExtraArgs(spec.Args...))
	}
	if len(spec.Env) > 0 {
		opts = append(opts, vllm.WithEnv(spec.Env))
	}
	ctr, err := vllm.Run(ctx, spec.Image, opts...)
	if err != nil {
		logs := ""
		if ctr != nil {
			logs = "\ncontainer log:\n" + ctr.LogTail()
		}
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("start vllm target: %w%s", err, logs)
	}
	base, err := ctr.BaseURL(ctx)
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("start vllm target: %w", err)
	}
	image := spec.Image
	if image == "" {
		image = vllm.Image()
	}
	return &Target{
		Kind:            scenario.TargetVLLM,
		BaseURL:         base,
		Model:           spec.Model,
		ServedModelName: ctr.Model,
		Image:           image,
		logs:            func(context.Context) (string, error) { return ctr.LogTail(), nil },
		close:           func(context.Context) error { return testcontainers.TerminateContainer(ctr) },
	}, nil
}
