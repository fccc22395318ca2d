package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servegate/servegate/benchtest/scenario"
	"github.com/servegate/servegate/containers/dockertest"
)

// A container target whose build context has no Dockerfile fails to start
// with one message that names the missing file; a scenario's context is
// relative to its file.
func TestContainerTargetMissingDockerfile(t *testing.T) {
	dockertest.Require(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "ctx"), 0o755))
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
name: gw
target:
  kind: container
  build: {context: ctx}
  backends: [{replicas: 2, args: ["--max_num_seqs=4"]}]
`), 0o644))
	scs, err := scenario.LoadFile(path)
	require.NoError(t, err)
	spec := NewPlan(scs[0]).Target
	assert.Equal(t, filepath.Join(dir, "ctx"), spec.Build.Context)
	gs, err := genericSpec(spec)
	require.NoError(t, err)
	require.Len(t, gs.Backends, 1)
	assert.Equal(t, 2, gs.Backends[0].Replicas)
	assert.Equal(t, map[string]string{"max_num_seqs": "4"}, gs.Backends[0].Knobs)

	_, err = StartTarget(context.Background(), spec, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start container target")
	assert.Contains(t, err.Error(), "Dockerfile")
}

// Container keys on another kind, and a container with neither an image
// nor a build, are file:line errors.
func TestContainerTargetValidation(t *testing.T) {
	for src, want := range map[string]string{
		"name: a\ntarget: {kind: container}\n":                                       "target.image: a container target needs target.image or target.build",
		"name: a\ntarget: {kind: sim, port: 8080}\n":                                 "target.port: only for target.kind container",
		"name: a\ntarget: {kind: container, image: x, backends: [{replicas: 99}]}\n": "target.backends[0].replicas: must be 1 to 16",
	} {
		_, err := scenario.Parse("bad.yaml", []byte(src))
		assert.ErrorContains(t, err, want, src)
	}
}

// TestSimTargetProfileFile: a sim target's profile file, relative to the
// scenario file, is copied into the container and served from there.
func TestSimTargetProfileFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a container")
	}
	dockertest.Require(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "profiles"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "profiles", "mine.yaml"), []byte("model: from-the-profile-file\nstep_fixed_ms: 1\n"), 0o644))
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("name: p\ntarget: {kind: sim, profile: profiles/mine.yaml}\n"), 0o644))
	scs, err := scenario.LoadFile(path)
	require.NoError(t, err)
	tgt, err := StartTarget(t.Context(), scs[0].Target, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tgt.Close(context.Background()) })
	assert.Equal(t, "from-the-profile-file", tgt.ServedModelName)
}
