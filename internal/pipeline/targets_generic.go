package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/generic"
)

// startContainer runs any OpenAI-compatible server from target.image, or
// built from target.build, with its simulator backends on a network it
// joins (containers/generic). Without target.model it asks the server's
// /v1/models which model it serves.
func startContainer(ctx context.Context, spec scenario.Target, log io.Writer) (*Target, error) {
	dockertest.SetDefaults()
	gs, err := genericSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("start container target: %w", err)
	}
	ctr, err := generic.Run(ctx, gs)
	err = gpuError(spec.GPUs, err)
	stop := func(ctx context.Context) error {
		if ctr == nil {
			return nil
		}
		return ctr.Terminate(ctx)
	}
	if err != nil {
		_ = stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start container target: %w", err)
	}
	base, err := ctr.BaseURL(ctx)
	if err == nil && spec.Model == "" {
		spec.Model, err = servedModel(ctx, base)
	}
	if err != nil {
		_ = stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start container target: %w", err)
	}
	fmt.Fprintf(log, "container target %s at %s with %d backends\n", ctr.Image, base, len(ctr.Backends))
	return &Target{
		Kind:            scenario.TargetContainer,
		BaseURL:         base,
		Model:           spec.Model,
		ServedModelName: spec.ServedModelName,
		Image:           ctr.Image,
		logs:            containerLogs(ctr.Container),
		close:           stop,
	}, nil
}

// genericSpec maps a scenario's container target onto the module's Spec.
func genericSpec(spec scenario.Target) (generic.Spec, error) {
	gs := generic.Spec{Image: spec.Image, Port: spec.Port, Env: maps.Clone(spec.Env), Cmd: spec.Cmd}
	if gpus := withGPUs(spec.GPUs); gpus != nil {
		gs.Options = append(gs.Options, gpus)
	}
	if b := spec.Build; b != nil {
		gs.Build = &generic.Build{Context: b.Context, Dockerfile: b.Dockerfile, Args: b.Args}
	}
	if w := spec.Wait; w != nil {
		gs.Wait = generic.Wait{Path: w.Path, Timeout: w.Timeout.D()}
	}
	for i, b := range spec.Backends {
		knobs, err := (scenario.Target{Args: b.Args}).SimKnobs()
		if err != nil {
			return gs, fmt.Errorf("backends[%d]: %w", i, err)
		}
		gb := generic.Backend{Kind: cmp.Or(b.Kind, scenario.TargetSim), Replicas: max(b.Replicas, 1), Profile: b.Profile, Knobs: knobs, Image: b.Image}
		if scenario.IsProfileFile(b.Profile) {
			// A profile file is copied into each replica.
			gb.Profile, gb.Options = "", simProfile(b.Profile)
		}
		gs.Backends = append(gs.Backends, gb)
	}
	return gs, nil
}
