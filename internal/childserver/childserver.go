// Package childserver runs a benchmark's HTTP server in a child process,
// so that the benchmark process's CPU and allocations are the client's
// alone: the test binary is run again with one helper test selected, and
// that test serves on loopback, prints its address and exits when its
// standard input closes.
//
// In the benchmark: url := childserver.Start(b, "TestMyServer", "mode").
// The helper test:
//
//	func TestMyServer(t *testing.T) {
//		mode := childserver.Mode()
//		if mode == "" {
//			t.Skip("helper process for BenchmarkX")
//		}
//		childserver.Serve(t, handlerFor(mode))
//	}
package childserver

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// env carries the mode from the benchmark to the child.
const env = "SERVEGATE_CHILD_SERVER"

// Mode is the mode the parent started this process with, or "" when this
// process is not a child server.
func Mode() string { return os.Getenv(env) }

// Serve serves h on a loopback port, prints the address for the parent
// and returns when standard input closes (the parent is done).
func Serve(tb testing.TB, h http.Handler) { ServeServer(tb, &http.Server{Handler: h}, nil) }

// ServeServer is Serve with the caller's server, on a listener wrapped by
// wrap when it is not nil (the simulator's StampListener, say).
func ServeServer(tb testing.TB, srv *http.Server, wrap func(net.Listener) net.Listener) {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	if wrap != nil {
		l = wrap(l)
	}
	go func() { _ = srv.Serve(l) }()
	fmt.Println("ADDR", addr)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = srv.Close()
}

// Start runs the test binary again as the helper test named test, in
// mode, and returns the server's base URL. The child exits when tb ends.
func Start(tb testing.TB, test, mode string) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			go func() { // drain the child's test output
				for sc.Scan() {
				}
			}()
			return "http://" + addr
		}
	}
	tb.Fatalf("helper server %s printed no address", test)
	return ""
}
