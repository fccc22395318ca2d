package generic

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/dockertest"
)

var (
	serverOnce sync.Once
	serverBin  []byte
	serverErr  error
)

// serverContext writes a build context with the test server's static binary
// and dockerfile, and returns its directory.
func serverContext(tb testing.TB, dockerfile string) string {
	tb.Helper()
	serverOnce.Do(func() {
		out := filepath.Join(os.TempDir(), "servegate-generic-test-server")
		if serverErr = dockertest.GoBuildStatic(context.Background(), ".", "./testdata/server", out); serverErr == nil {
			serverBin, serverErr = os.ReadFile(out)
			os.Remove(out)
		}
	})
	require.NoError(tb, serverErr)
	dir := filepath.Join(tb.TempDir(), "server")
	require.NoError(tb, os.MkdirAll(dir, 0o755))
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "server"), serverBin, 0o755))
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644))
	return dir
}

const serverDockerfile = "FROM scratch\nCOPY server /server\nENTRYPOINT [\"/server\"]\n"

func get(tb testing.TB, url string) (int, string) {
	tb.Helper()
	resp, err := http.Get(url)
	require.NoError(tb, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return resp.StatusCode, string(body)
}

// TestRunWithBackends builds the target, starts it in front of two
// simulator replicas, and checks what the target sees (their URLs, reached
// over the network) and what the host sees (each backend and its ground
// truth).
func TestRunWithBackends(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ctr, err := Run(ctx, Spec{
		Build:    &Build{Context: serverContext(t, serverDockerfile)},
		Port:     8080,
		Env:      map[string]string{"GREETING": "hello"},
		Backends: []Backend{{Kind: "sim", Replicas: 2, Knobs: map[string]string{"step_fixed_ms": "2"}}},
	})
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	assert.Equal(t, []string{"sim-0", "sim-1"}, ctr.Aliases)
	assert.True(t, strings.HasPrefix(ctr.Image, "servegate-target-server:"), ctr.Image)

	base, err := ctr.BaseURL(ctx)
	require.NoError(t, err)
	_, env := get(t, base+"/env")
	assert.Equal(t, "http://sim-0:8000,http://sim-1:8000 hello", env)
	_, check := get(t, base+"/check")
	assert.Equal(t, "http://sim-0:8000 200,http://sim-1:8000 200", check, "the target reaches each backend by its alias")

	urls, err := ctr.BackendURLs(ctx)
	require.NoError(t, err)
	require.Len(t, urls, 2)
	// A request sent to the second backend: Truth finds it there.
	body := `{"model":"servegate/sim","prompt":"hi","max_tokens":3,"ignore_eos":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, urls[1]+"/v1/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "generic-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	truth, err := ctr.Truth(ctx, "generic-1")
	require.NoError(t, err)
	assert.Equal(t, 3, truth.OutputTokens)
	_, err = ctr.Truth(ctx, "never-sent")
	assert.ErrorContains(t, err, "no backend knows request never-sent")

	require.NoError(t, ctr.Terminate(ctx))
}

// TestImageCachedByContent builds once, finds the image the second time
// without building, and builds again when a file of the context changes.
func TestImageCachedByContent(t *testing.T) {
	dockertest.Require(t)
	ctx := context.Background()
	dir := serverContext(t, serverDockerfile)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "note.txt"), []byte(time.Now().String()), 0o644))
	var log1, log2, log3 strings.Builder
	tag1, err := Image(ctx, Build{Context: dir}, &log1)
	require.NoError(t, err)
	t.Cleanup(func() { removeImage(t, tag1) })
	assert.NotEmpty(t, log1.String(), "the first call builds")
	tag2, err := Image(ctx, Build{Context: dir}, &log2)
	require.NoError(t, err)
	assert.Equal(t, tag1, tag2)
	assert.Empty(t, log2.String(), "the second call finds the image")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "note.txt"), []byte("changed"), 0o644))
	tag3, err := Image(ctx, Build{Context: dir}, &log3)
	require.NoError(t, err)
	t.Cleanup(func() { removeImage(t, tag3) })
	assert.NotEqual(t, tag1, tag3)
	assert.NotEmpty(t, log3.String())
	tag4, err := Image(ctx, Build{Context: dir, Args: map[string]string{"X": "1"}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { removeImage(t, tag4) })
	assert.NotEqual(t, tag3, tag4, "build args are part of the hash")
}

func removeImage(tb testing.TB, tag string) {
	if out, err := exec.Command("docker", "image", "rm", "-f", tag).CombinedOutput(); err != nil {
		tb.Logf("remove %s: %v %s", tag, err, out)
	}
}

// TestRunErrors: each bad input gets one error that says what is wrong and
// carries the build or container log's tail.
func TestRunErrors(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	good := serverContext(t, serverDockerfile)
	for _, tc := range []struct {
		name string
		spec Spec
		want []string
	}{
		{"missing dockerfile", Spec{Build: &Build{Context: good, Dockerfile: "nope/Dockerfile"}},
			[]string{"build: dockerfile " + filepath.Join(good, "nope", "Dockerfile"), "no such file"}},
		{"missing context", Spec{Build: &Build{Context: filepath.Join(good, "absent")}},
			[]string{"build: context", "absent", "not a directory"}},
		{"build error", Spec{Build: &Build{Context: serverContext(t, "FROM scratch\nCOPY missing-file /x\n")}},
			[]string{"build servegate-target-server:", "missing-file"}},
		{"never answers", Spec{Build: &Build{Context: good}, Port: 8080, Cmd: []string{"-port", "9999"}, Wait: Wait{Timeout: 3 * time.Second}},
			[]string{"port 8080/tcp, GET /health: no 2xx answer in 3s", "container log, last lines:", "listening on :9999"}},
		{"exits", Spec{Build: &Build{Context: good}, Port: 8080, Cmd: []string{"crash"}},
			[]string{"the container exited", "exit code 3", "boom: crashing on purpose"}},
		{"no image", Spec{}, []string{"give an image or a build"}},
		{"both", Spec{Image: "x", Build: &Build{Context: good}}, []string{"not both"}},
		{"replicas", Spec{Image: "x", Backends: []Backend{{Replicas: 17}}}, []string{"backend 0: replicas 17: want 1 to 16"}},
		{"backend kind", Spec{Image: "x", Backends: []Backend{{Kind: "vllm"}}}, []string{`backend 0: kind "vllm"`}},
		{"wait path", Spec{Image: "x", Wait: Wait{Path: "health"}}, []string{`wait path "health"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctr, err := Run(ctx, tc.spec)
			if ctr != nil {
				testcontainers.CleanupContainer(t, ctr)
			}
			require.Error(t, err)
			t.Logf("error:\n%v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestTail(t *testing.T) {
	tl := newTail(3, 1<<10)
	io.WriteString(tl, "one\ntwo\nthr")
	io.WriteString(tl, "ee\nfour\nfive")
	assert.Equal(t, "  three\n  four\n  five", tl.String())
	big := newTail(100, 16)
	io.WriteString(big, strings.Repeat("x", 100)+"\nshort\n")
	assert.LessOrEqual(t, len(big.String()), 16+2*2+1)
	assert.Contains(t, big.String(), "short")
}
