package pipeline

import (
	"errors"
	"fmt"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/benchtest/scenario"
)

// deviceRequest is the Docker device request of a target's gpus, as
// docker run --gpus makes it: the default driver, the gpu capability,
// a count (-1 for all) or device ids.
func deviceRequest(g scenario.GPUs) container.DeviceRequest {
	req := container.DeviceRequest{Capabilities: [][]string{{"gpu"}}}
	switch {
	case g.All:
		req.Count = -1
	case g.Count > 0:
		req.Count = g.Count
	default:
		req.DeviceIDs = append([]string(nil), g.IDs...)
	}
	return req
}

// withGPUs is the container option that requests a target's GPUs; nil
// when it asks for none.
func withGPUs(g scenario.GPUs) testcontainers.ContainerCustomizer {
	if g.None() {
		return nil
	}
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.DeviceRequests = append(hc.DeviceRequests, deviceRequest(g))
	})
}

// ErrNoGPURuntime says that Docker cannot give a container GPUs.
var ErrNoGPURuntime = errors.New("Docker on this machine has no GPU runtime")

// gpuError turns Docker's answer to a GPU request it cannot serve into
// one message naming target.gpus and the remedy; other errors pass.
func gpuError(g scenario.GPUs, err error) error {
	if err == nil || g.None() || !strings.Contains(err.Error(), "could not select device driver") {
		return err
	}
	return fmt.Errorf("target.gpus %s: %w (Docker said: could not select device driver): install the NVIDIA Container Toolkit and restart Docker, or remove target.gpus", g, ErrNoGPURuntime)
}
