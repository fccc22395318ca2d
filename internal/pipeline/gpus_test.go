package pipeline

import (
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/simulator"
)

// hostConfig applies a container option to an empty request and returns
// the host config Docker would get.
func hostConfig(t *testing.T, opts ...testcontainers.ContainerCustomizer) *container.HostConfig {
	t.Helper()
	req := testcontainers.GenericContainerRequest{}
	for _, o := range opts {
		require.NoError(t, o.Customize(&req))
	}
	hc := &container.HostConfig{}
	if req.HostConfigModifier != nil {
		req.HostConfigModifier(hc)
	}
	return hc
}

// TestGPURequest: target.gpus becomes the device request docker run
// --gpus makes, on vllm and container targets alike.
func TestGPURequest(t *testing.T) {
	gpu := [][]string{{"gpu"}}
	for _, c := range []struct {
		gpus scenario.GPUs
		want container.DeviceRequest
	}{
		{scenario.GPUs{All: true}, container.DeviceRequest{Count: -1, Capabilities: gpu}},
		{scenario.GPUs{Count: 2}, container.DeviceRequest{Count: 2, Capabilities: gpu}},
		{scenario.GPUs{IDs: []string{"0", "GPU-3a1c"}}, container.DeviceRequest{DeviceIDs: []string{"0", "GPU-3a1c"}, Capabilities: gpu}},
	} {
		assert.Equal(t, []container.DeviceRequest{c.want}, hostConfig(t, withGPUs(c.gpus)).DeviceRequests, "gpus: %s", c.gpus)

		gs, err := genericSpec(scenario.Target{Kind: scenario.TargetContainer, Image: "srv:1", GPUs: c.gpus})
		require.NoError(t, err)
		assert.Equal(t, []container.DeviceRequest{c.want}, hostConfig(t, gs.Options...).DeviceRequests, "container target, gpus: %s", c.gpus)
	}
	assert.Nil(t, withGPUs(scenario.GPUs{}), "no gpus, no option")
	gs, err := genericSpec(scenario.Target{Kind: scenario.TargetContainer, Image: "srv:1"})
	require.NoError(t, err)
	assert.Empty(t, gs.Options)
}

// TestGPUsWithoutRuntime: on a Docker with no GPU runtime (this
// machine's), a target asking for GPUs fails before its container
// starts, with one message naming target.gpus and the remedy.
func TestGPUsWithoutRuntime(t *testing.T) {
	dockertest.Require(t)
	if hasGPURuntime(t) {
		t.Skip("this Docker has a GPU runtime")
	}
	ctx := t.Context()
	img, err := simulator.Image(ctx, nil)
	require.NoError(t, err)
	spec := scenario.Target{Kind: scenario.TargetContainer, Image: img, Port: 8000, GPUs: scenario.GPUs{Count: 1}}
	_, err = StartTarget(ctx, spec, nil)
	require.ErrorIs(t, err, ErrNoGPURuntime)
	assert.Contains(t, err.Error(), "start container target: ")
	assert.Contains(t, err.Error(), "target.gpus 1: Docker on this machine has no GPU runtime (Docker said: could not select device driver): install the NVIDIA Container Toolkit")

	// A vllm target the same, with the image `make vllm-image` built
	// when it is there.
	vspec := scenario.Target{Kind: scenario.TargetVLLM, GPUs: scenario.GPUs{All: true}}
	_, err = StartTarget(ctx, vspec, nil)
	require.ErrorIs(t, err, ErrNoGPURuntime)
	assert.Contains(t, err.Error(), "start vllm target: target.gpus all: Docker on this machine has no GPU runtime")
}

// hasGPURuntime reports whether Docker lists the NVIDIA runtime.
func hasGPURuntime(t *testing.T) bool {
	cli, err := testcontainers.NewDockerClientWithOpts(t.Context())
	require.NoError(t, err)
	defer cli.Close()
	res, err := cli.Info(t.Context(), client.InfoOptions{})
	require.NoError(t, err)
	_, ok := res.Info.Runtimes["nvidia"]
	return ok
}
