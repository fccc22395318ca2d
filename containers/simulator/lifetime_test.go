package simulator

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/dockertest"
)

// childEnv tells TestLifetimeChild, run in a child process, what to do:
// "hold" starts a simulator container and waits to be killed, "start" starts
// one and terminates it (a normal run, whose first start removes leftovers).
const childEnv = "SERVEGATE_LIFETIME_CHILD"

// gracePeriod is how long a container may outlive its test process.
const gracePeriod = 15 * time.Second

// TestLifetimeChild is the child test process of TestContainersDieWithTheTest;
// it does nothing unless SERVEGATE_LIFETIME_CHILD is set.
func TestLifetimeChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("child of TestContainersDieWithTheTest")
	}
	ctx := context.Background()
	img, err := Image(ctx, nil)
	require.NoError(t, err)
	ctr, err := Run(ctx, img, WithProfile("instant"))
	if mode != "hold" {
		testcontainers.CleanupContainer(t, ctr)
	}
	require.NoError(t, err)
	fmt.Printf("CONTAINER %s\n", ctr.GetContainerID())
	if mode == "hold" {
		time.Sleep(time.Hour) // until a signal or -test.timeout ends the process
	}
}

// TestContainersDieWithTheTest interrupts a child test process (this test
// binary run again, as go test runs it) holding a
// simulator container each way a run ends early, and checks that no
// container of that child remains within 15 s: SIGINT and SIGTERM (to the
// process group, as Ctrl-C and CI cancellation send them) are handled by the
// child itself; after go test's -timeout panic its watchdog removes the
// container; when both are SIGKILLed, the next run removes the leftover at
// its first container start.
func TestContainersDieWithTheTest(t *testing.T) {
	dockertest.Require(t)
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := Image(ctx, os.Stderr) // build before the children, so they start at once
	require.NoError(t, err)
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })

	for name, sig := range map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM} {
		t.Run(name, func(t *testing.T) {
			child, id := startChild(t, ctx, "hold")
			requireOwnedBy(t, ctx, cli, id, child.Process.Pid)
			sent := time.Now()
			require.NoError(t, syscall.Kill(-child.Process.Pid, sig))
			err := child.Wait()
			gone := waitGone(t, ctx, cli, id, child.Process.Pid, sent)
			t.Logf("%s: no labelled container of the child %v after the signal", name, gone.Round(time.Millisecond))
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			ws := ee.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == sig, "the child must die of %v, as without servegate: %v", sig, err)
		})
	}

	t.Run("timeout", func(t *testing.T) {
		child, id := startChild(t, ctx, "hold", "-test.timeout=12s")
		requireOwnedBy(t, ctx, cli, id, child.Process.Pid)
		err := child.Wait()
		died := time.Now()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the child must end by its -timeout panic")
		require.Equal(t, 2, ee.ExitCode())
		gone := waitGone(t, ctx, cli, id, child.Process.Pid, died)
		t.Logf("-timeout: no labelled container of the child %v after it died (its watchdog removed it)", gone.Round(time.Millisecond))
	})

	// SIGKILL of the child and of its watchdog leaves the container to
	// the next run, whose first container start removes it.
	t.Run("SIGKILL", func(t *testing.T) {
		child, id := startChild(t, ctx, "hold")
		requireOwnedBy(t, ctx, cli, id, child.Process.Pid)
		dogs := childrenOf(t, child.Process.Pid)
		require.Len(t, dogs, 1, "the child runs one watchdog")
		require.NoError(t, syscall.Kill(dogs[0], syscall.SIGKILL))
		require.NoError(t, syscall.Kill(-child.Process.Pid, syscall.SIGKILL))
		_ = child.Wait()
		_, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		require.NoError(t, err, "with its owner and watchdog killed, the container is left over")

		started := time.Now()
		next, _ := startChild(t, ctx, "start")
		require.NoError(t, next.Wait(), "the next run")
		gone := waitGone(t, ctx, cli, id, child.Process.Pid, started)
		t.Logf("SIGKILL: no labelled container of the child %v after the next run started (it removed the leftover)", gone.Round(time.Millisecond))
	})
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var kids []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			k, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			kids = append(kids, k)
		}
	}
	return kids
}

// startChild runs this test binary's TestLifetimeChild in mode in a process
// group of its own and returns it with the id of its container.
func startChild(t *testing.T, ctx context.Context, mode string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestLifetimeChild$", "-test.count=1"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("child %s stderr:\n%s", mode, stderr.String())
		}
	})
	ids := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "CONTAINER "); ok {
				ids <- id
			}
		}
		close(ids)
	}()
	select {
	case id, ok := <-ids:
		require.True(t, ok, "the child ended without starting a container:\n%s", stderr.String())
		t.Cleanup(func() { // never leave one behind, whatever the test found
			rm, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if cli, err := testcontainers.NewDockerClientWithOpts(rm); err == nil {
				_, _ = cli.ContainerRemove(rm, id, client.ContainerRemoveOptions{Force: true})
				cli.Close()
			}
		})
		return cmd, id
	case <-ctx.Done():
		t.Fatalf("the child did not start a container: %v", ctx.Err())
		return nil, ""
	}
}

// requireOwnedBy checks that container id carries pid's owner labels.
func requireOwnedBy(t *testing.T, ctx context.Context, cli *testcontainers.DockerClient, id string, pid int) {
	t.Helper()
	info, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	require.NoError(t, err)
	labels := info.Container.Config.Labels
	require.Equal(t, strconv.Itoa(pid), labels[dockertest.LabelOwnerPID], "labels: %v", labels)
	require.NotEmpty(t, labels[dockertest.LabelOwnerStart], "labels: %v", labels)
	require.NotEmpty(t, labels[dockertest.LabelOwnerHost], "labels: %v", labels)
}

// waitGone waits up to gracePeriod after since until neither container id
// nor any container labelled with owner pid exists, and returns how long
// after since that was.
func waitGone(t *testing.T, ctx context.Context, cli *testcontainers.DockerClient, id string, pid int, since time.Time) time.Duration {
	t.Helper()
	var left []string
	for time.Since(since) < gracePeriod {
		left = left[:0]
		_, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if !cerrdefs.IsNotFound(err) {
			left = append(left, fmt.Sprintf("%.12s (inspect: %v)", id, err))
		}
		list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", dockertest.LabelOwnerPID+"="+strconv.Itoa(pid))})
		require.NoError(t, err)
		for _, c := range list.Items {
			if c.ID != id {
				left = append(left, fmt.Sprintf("%.12s", c.ID))
			}
		}
		if len(left) == 0 {
			return time.Since(since)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("containers of the child (pid %d) still exist %v after it was interrupted: %s", pid, gracePeriod, strings.Join(left, ", "))
	return 0
}
