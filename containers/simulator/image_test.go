package simulator

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/servegate/servegate/internal/sim"
)

// TestPureGoFallback builds the binary the image falls back to when the
// static cgo link fails, and checks that it runs and refuses a tokenizer
// file with a clear message.
func TestPureGoFallback(t *testing.T) {
	root, err := repoRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "sim")
	out, err := goBuild(ctx, root, bin, false)
	require.NoError(t, err, "%s", out)

	got, err := exec.CommandContext(ctx, bin, "--profile", "cpu-small", "--slowdown", "1.25", "--print-params").Output()
	require.NoError(t, err)
	var p sim.Params
	require.NoError(t, yaml.Unmarshal(got, &p))
	require.Equal(t, 1.25, p.Slowdown)
	require.Equal(t, 16, p.MaxNumSeqs)

	msg, err := exec.CommandContext(ctx, bin, "--tokenizer", "/nope.json", "--port", "0").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(msg), "built without cgo")
}

// TestSourceHash: the image tag changes with the sources and nothing else.
func TestSourceHash(t *testing.T) {
	root, err := repoRoot()
	require.NoError(t, err)
	a, err := sourceHash(root, []byte("tok"))
	require.NoError(t, err)
	b, err := sourceHash(root, []byte("tok"))
	require.NoError(t, err)
	c, err := sourceHash(root, []byte("other tok"))
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.NotEqual(t, a, c)
	require.Len(t, a, 20)
}

// TestHashedSourcesCoverDeps: every servegate package the simulator
// command imports lies under one of hashedSources, so a change to any of
// them changes the image's tag.
func TestHashedSourcesCoverDeps(t *testing.T) {
	root, err := repoRoot()
	require.NoError(t, err)
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", mainPackage)
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || !filepath.IsLocal(rel) {
			continue // a module dependency, pinned by go.sum
		}
		covered := false
		for _, src := range hashedSources {
			if rel == src || strings.HasPrefix(rel, src+string(filepath.Separator)) {
				covered = true
			}
		}
		require.True(t, covered, "the simulator imports %s, which hashedSources does not cover", rel)
	}
}
