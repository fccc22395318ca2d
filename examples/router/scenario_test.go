package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest"
	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
)

// TestRouterScenario runs scenario.yaml through benchtest, as a user's
// repository would: the container target builds the router's image from
// the scenario's directory and starts it in front of two simulator
// replicas; the scenario's SLOs are asserted.
func TestRouterScenario(t *testing.T) {
	dockertest.Require(t)
	dir := buildContext(t)
	yaml, err := os.ReadFile("scenario.yaml")
	require.NoError(t, err)
	path := filepath.Join(dir, "scenario.yaml")
	require.NoError(t, os.WriteFile(path, yaml, 0o644))
	t.Setenv(scenario.EnvOut, t.TempDir())
	scs, err := scenario.LoadFile(path)
	require.NoError(t, err)
	require.Len(t, scs, 1)
	require.Equal(t, scenario.TargetContainer, scs[0].Target.Kind)
	require.Len(t, scs[0].Target.Backends, 1)
	benchtest.Run(t, scs[0])
}
