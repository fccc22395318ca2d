package dockertest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// watchdogEnv, set in the environment of this program run again, makes it
// the watchdog of the process named by the value ("pid start") instead of
// itself: see startWatchdog.
const watchdogEnv = "SERVEGATE_DOCKERTEST_WATCHDOG"

func init() {
	if v, ok := os.LookupEnv(watchdogEnv); ok {
		os.Exit(watchdog(v, os.Stdin))
	}
}

// watchdogPipe is the write end of the watchdog's stdin. Nothing writes to
// it and nothing closes it: it closes when this process exits, however it
// exits. Held here so that it is never collected (and closed) before.
var watchdogPipe *os.File

// startWatchdog runs this program again as the watchdog of this process: a
// child in a process group of its own that ignores SIGINT, SIGTERM and
// SIGHUP, and waits for its stdin (a pipe whose write end only this process
// holds) to reach end of file, which happens when this process exits by
// any cause: a signal, go test's -timeout panic, SIGKILL, a crash. It then
// removes the containers labelled with this process and exits.
func startWatchdog() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start watchdog: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start watchdog: %w", err)
	}
	me := Self()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), watchdogEnv+"="+strconv.Itoa(me.PID)+" "+me.Start)
	cmd.Stdin = r // stdout and stderr: /dev/null, so no pipe of go test waits for it
	cmd.SysProcAttr = ownProcessGroup()
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("start watchdog: %w", err)
	}
	watchdogPipe = w
	go cmd.Wait() // reap it should it end first
	return nil
}

// watchdog waits for end of file on stdin, then removes the containers of
// the owner described by v ("pid start") and returns the exit status.
func watchdog(v string, stdin io.Reader) int {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	pidText, start, _ := strings.Cut(v, " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return 2
	}
	_, _ = io.Copy(io.Discard, stdin) // returns when the owner has exited
	owner := Owner{PID: pid, Start: start, Host: Self().Host, Boot: Self().Boot}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	if _, err := remove(ctx, nil, func(o Owner) bool { return o == owner }); err != nil {
		return 1
	}
	return 0
}
