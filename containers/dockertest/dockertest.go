// Package dockertest holds what container tests share: the check that a
// Docker daemon answers, this machine's testcontainers settings, building
// a FROM-scratch image around a static Go binary from an in-memory context,
// and the lifetime of the containers servegate starts (Owned): labelled with
// their owner process, removed on SIGINT and SIGTERM, by a watchdog process
// when their owner dies without a chance to (go test -timeout, SIGKILL), and
// by the next run when the watchdog is gone too. The design and the Ryuk
// decision are written down in lifetime.go.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// hermeticDefaults are the testcontainers settings a machine with no
// registry needs: no reaper (its image cannot be pulled; Owned removes
// servegate's containers instead, see lifetime.go) and the Docker host on
// loopback (not the default gateway). They apply only where the variable
// is unset, so a user's own configuration wins.
var hermeticDefaults = map[string]string{
	"TESTCONTAINERS_RYUK_DISABLED": "true",
	"TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1",
}

// EnvDockerLog is the variable that turns testcontainers' own log lines
// (image builds, container start and stop) back on: SERVEGATE_DOCKER_LOG=1.
const EnvDockerLog = "SERVEGATE_DOCKER_LOG"

var quiet sync.Once

// SetDefaults sets the hermetic testcontainers defaults for variables that are
// unset, and silences testcontainers' logger unless SERVEGATE_DOCKER_LOG=1:
// its lines would flood a run's output, where servegate's own lines belong.
// Call it before the first testcontainers call of the process.
func SetDefaults() {
	for k, v := range hermeticDefaults {
		if _, ok := os.LookupEnv(k); !ok {
			os.Setenv(k, v)
		}
	}
	quiet.Do(func() {
		if os.Getenv(EnvDockerLog) != "1" {
			tclog.SetDefault(tclog.NewNoopLogger())
		}
	})
}

// Ping reports whether a Docker daemon answers.
func Ping(ctx context.Context) error {
	SetDefaults()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("docker provider: %w", err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Health(ctx); err != nil {
		return fmt.Errorf("docker health: %w", err)
	}
	return nil
}

// Require fails the test when no Docker daemon answers, with a message that
// says how to start one. With SERVEGATE_SKIP_DOCKER=1 it skips instead.
func Require(tb testing.TB) {
	tb.Helper()
	err := Ping(context.Background())
	if err == nil {
		return
	}
	if os.Getenv("SERVEGATE_SKIP_DOCKER") == "1" {
		tb.Skipf("no Docker daemon (%v); skipped because SERVEGATE_SKIP_DOCKER=1", err)
	}
	tb.Fatalf("no Docker daemon answers: %v\n"+
		"start one (`sudo systemctl start docker`, or `dockerd >/tmp/dockerd.log 2>&1 &`; on Debian `apt-get install docker.io` first),\n"+
		"or set SERVEGATE_SKIP_DOCKER=1 to skip the container tests", err)
}

// GoBuildStatic compiles the Go package pkg, named as the go command names
// it from dir (".", "./cmd/app"), into a static Linux binary at out: no cgo,
// so it runs in a FROM-scratch image. A failure carries the compiler's
// output.
func GoBuildStatic(ctx context.Context, dir, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// ScratchContext returns an in-memory docker build context (a tar archive)
// holding a Dockerfile that copies binary into an empty image and runs it.
// extra files are added beside it and copied to the image root too, in name
// order so that the same inputs give the same context.
func ScratchContext(binary []byte, args []string, extra map[string][]byte) (*bytes.Reader, error) {
	names := slices.Sorted(maps.Keys(extra))
	var df strings.Builder
	df.WriteString("FROM scratch\nCOPY app /app\n")
	for _, name := range names {
		fmt.Fprintf(&df, "COPY %s /%s\n", name, name)
	}
	df.WriteString(`ENTRYPOINT ["/app"`)
	for _, a := range args {
		fmt.Fprintf(&df, ", %q", a)
	}
	df.WriteString("]\n")

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := addFile(tw, "Dockerfile", []byte(df.String())); err != nil {
		return nil, err
	}
	if err := addFile(tw, "app", binary); err != nil {
		return nil, err
	}
	for _, name := range names {
		if err := addFile(tw, name, extra[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	return bytes.NewReader(buf.Bytes()), nil
}

func addFile(tw *tar.Writer, name string, data []byte) error {
	hdr := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	return nil
}
