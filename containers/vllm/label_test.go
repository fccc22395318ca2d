package vllm

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/dockertest"
)

// labelledImage builds an empty image (FROM scratch) carrying labels, with
// no registry, and removes it when the test ends.
func labelledImage(t *testing.T, tag string, labels map[string]string) {
	t.Helper()
	df := "FROM scratch\n"
	for k, v := range labels {
		df += "LABEL " + k + "=" + v + "\n"
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))}))
	_, err := tw.Write([]byte(df))
	require.NoError(t, err)
	require.NoError(t, tw.Close())

	p, err := testcontainers.NewDockerProvider()
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	ctx := context.Background()
	res, err := p.Client().ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Remove: true})
	require.NoError(t, err)
	out, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _, _ = p.Client().ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true}) })
}

// TestCPUCheckReadsTheImageLabel runs the check against real Docker: an
// image labelled with the AVX512-VNNI build's flags (what make vllm-image
// writes) is refused on an AVX2-only CPU before any container starts, and
// accepted on an AVX512 one (then the empty image cannot start, which is
// a different error).
func TestCPUCheckReadsTheImageLabel(t *testing.T) {
	dockertest.Require(t)
	const tag = "servegate-test/vllm-label:avx512vnni"
	labelledImage(t, tag, map[string]string{LabelCPUFlags: "avx512f,avx512bw,avx512vl,avx512dq,avx512_vnni,avx512_bf16", LabelISA: ISAAVX512VNNI})

	c, err := Run(context.Background(), tag, withCPUInfo("testdata/cpuinfo-avx2.txt", "amd64"))
	assert.Nil(t, c, "no container")
	var ce *CPUError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, AVX512Flags, ce.Missing)
	assert.Contains(t, err.Error(), "its label "+LabelCPUFlags+"=avx512f,")
	assert.Contains(t, err.Error(), LocalImageAVX2, "the AVX2 image is suggested")
	t.Log(err)

	err = (&options{cpuInfoPath: "testdata/cpuinfo-avx512.txt", goarch: "amd64", images: dockerImages{}}).checkCPU(context.Background(), tag)
	assert.NoError(t, err, "an AVX512 CPU passes the check")
}
