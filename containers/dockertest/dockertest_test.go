package dockertest

import (
	"archive/tar"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

const helloServer = `package main

import (
	"fmt"
	"net/http"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from scratch %s", r.URL.Path)
	})
	if err := http.ListenAndServe(":8080", nil); err != nil {
		panic(err)
	}
}
`

// buildStatic compiles a one-file Go program into a static binary.
func buildStatic(tb testing.TB, src string) []byte {
	tb.Helper()
	dir := tb.TempDir()
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	require.NoError(tb, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644))
	require.NoError(tb, GoBuildStatic(context.Background(), dir, ".", "app"))
	bin, err := os.ReadFile(filepath.Join(dir, "app"))
	require.NoError(tb, err)
	return bin
}

// TestScratchContainer proves the Docker path works where the tests run: it
// builds a FROM-scratch image around a static Go server from an in-memory
// context, starts it with testcontainers, and reaches it over the mapped
// loopback port.
func TestScratchContainer(t *testing.T) {
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	archive, err := ScratchContext(buildStatic(t, helloServer), nil, nil)
	require.NoError(t, err)

	ctr, err := testcontainers.Run(ctx, "",
		testcontainers.WithDockerfile(testcontainers.FromDockerfile{ContextArchive: archive}),
		testcontainers.WithExposedPorts("8080/tcp"),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/ready").WithPort("8080/tcp").WithStartupTimeout(time.Minute)),
	)
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)

	host, err := ctr.Host(ctx)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host, "the Docker host must be loopback on this machine")
	port, err := ctr.MappedPort(ctx, "8080/tcp")
	require.NoError(t, err)

	resp, err := http.Get("http://" + host + ":" + port.Port() + "/smoke")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "hello from scratch /smoke", string(body))
}

func TestScratchContextLists(t *testing.T) {
	archive, err := ScratchContext([]byte("bin"), []string{"--port", "8000"}, map[string][]byte{"profile.yaml": []byte("x: 1")})
	require.NoError(t, err)
	names := tarNames(t, archive)
	require.Equal(t, []string{"Dockerfile", "app", "profile.yaml"}, names)
}

func tarNames(tb testing.TB, r io.Reader) []string {
	tb.Helper()
	tr := tar.NewReader(r)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		require.NoError(tb, err)
		names = append(names, h.Name)
	}
}

// TestQuietLogger runs a child test process that calls SetDefaults and then
// logs through testcontainers' logger: the line is dropped unless
// SERVEGATE_DOCKER_LOG=1 asks for it.
func TestQuietLogger(t *testing.T) {
	if os.Getenv("SERVEGATE_CHILD_QUIET") == "1" {
		t.Skip("this is the child process")
	}
	for _, tc := range []struct {
		env  string
		want bool
	}{{"", false}, {"0", false}, {"1", true}} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildQuiet$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "SERVEGATE_CHILD_QUIET=1", EnvDockerLog+"="+tc.env)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "PASS: TestChildQuiet", "the child ran")
		if tc.want {
			require.Contains(t, string(out), "testcontainers-log-marker", "%s=%q", EnvDockerLog, tc.env)
		} else {
			require.NotContains(t, string(out), "testcontainers-log-marker", "%s=%q", EnvDockerLog, tc.env)
		}
	}
}

// TestChildQuiet is the child of TestQuietLogger.
func TestChildQuiet(t *testing.T) {
	if os.Getenv("SERVEGATE_CHILD_QUIET") != "1" {
		t.Skip("run by TestQuietLogger in a child process")
	}
	SetDefaults()
	tclog.Printf("testcontainers-log-marker")
}

// TestRemoveOrphans starts two labelled containers, one owned by a process
// that has exited and one by a live process (this test's parent), and
// checks that a new run removes the first only.
func TestRemoveOrphans(t *testing.T) {
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildStatic(t, helloServer)

	exited := exec.Command("true")
	require.NoError(t, exited.Run())
	parentStart, err := procStart(os.Getppid())
	require.NoError(t, err)
	me := Self()
	dead, live := me, me
	dead.PID = exited.Process.Pid
	live.PID, live.Start = os.Getppid(), parentStart

	start := func(o Owner) testcontainers.Container {
		archive, err := ScratchContext(bin, nil, nil)
		require.NoError(t, err)
		ctr, err := testcontainers.Run(ctx, "",
			testcontainers.WithDockerfile(testcontainers.FromDockerfile{ContextArchive: archive}),
			Owned(), testcontainers.WithLabels(o.Labels()))
		testcontainers.CleanupContainer(t, ctr)
		require.NoError(t, err)
		return ctr
	}
	orphan, kept := start(dead), start(live)

	// Another test process starting a container meanwhile may remove the
	// orphan first: what counts is that it is gone.
	_, err = RemoveOrphans(ctx)
	require.NoError(t, err)
	_, err = orphan.State(ctx)
	require.Error(t, err, "the container of an exited process must be removed")
	state, err := kept.State(ctx)
	require.NoError(t, err, "the container of a live process must be kept")
	require.True(t, state.Running)
}
