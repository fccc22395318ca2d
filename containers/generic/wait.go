package generic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// logTailLines is how many of its last log lines an error about a
// container carries.
const logTailLines = 30

// wait polls the target until a GET of w.Path answers 2xx. It stops early,
// with the container log's tail, when the container exits; and at the
// timeout with the last answer or error and the log's tail.
func (c *Container) wait(ctx context.Context, w Wait) error {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	last := errors.New("no attempt")
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		state, err := c.State(ctx)
		if err == nil && !state.Running {
			return withLogTail(context.Background(), c.Container,
				fmt.Errorf("the container exited (status %s, exit code %d) before %s answered", state.Status, state.ExitCode, w.Path))
		}
		err = probe(ctx, hc, c, w.Path)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil { // the probe cut short by the deadline says nothing
			last = err
		}
		select {
		case <-ctx.Done():
			return withLogTail(context.Background(), c.Container,
				fmt.Errorf("port %s, GET %s: no 2xx answer in %v; last: %w", c.port, w.Path, w.Timeout, last))
		case <-tick.C:
		}
	}
}

// probe GETs path on the target once.
func probe(ctx context.Context, hc *http.Client, c *Container, path string) error {
	base, err := c.BaseURL(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// withLogTail adds the last lines of ctr's log to err; ctr may be nil.
func withLogTail(ctx context.Context, ctr testcontainers.Container, err error) error {
	if ctr == nil {
		return err
	}
	tail, lerr := logTail(ctx, ctr, logTailLines)
	switch {
	case lerr != nil:
		return fmt.Errorf("%w\n(container log unavailable: %v)", err, lerr)
	case tail == "":
		return fmt.Errorf("%w\ncontainer log: empty", err)
	}
	return fmt.Errorf("%w\ncontainer log, last lines:\n%s", err, tail)
}

// logTail returns the last n lines of ctr's log (stdout and stderr), at
// most 8 KiB of them.
func logTail(ctx context.Context, ctr testcontainers.Container, n int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	t := newTail(n, 8<<10)
	if _, err := io.Copy(t, rc); err != nil {
		return "", err
	}
	return t.String(), nil
}

// A tail keeps the last lines written to it, within a byte budget, so a
// huge log never fills memory.
type tail struct {
	lines    []string
	partial  []byte
	maxLines int
	maxBytes int
}

func newTail(maxLines, maxBytes int) *tail { return &tail{maxLines: maxLines, maxBytes: maxBytes} }

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.partial = append(t.partial, p...)
			if len(t.partial) > t.maxBytes {
				t.partial = t.partial[len(t.partial)-t.maxBytes:]
			}
			break
		}
		t.partial = append(t.partial, p[:i]...)
		t.push(string(t.partial))
		t.partial = t.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (t *tail) push(line string) {
	if len(line) > t.maxBytes {
		line = line[len(line)-t.maxBytes:]
	}
	t.lines = append(t.lines, line)
	size := 0
	for _, l := range t.lines {
		size += len(l) + 1
	}
	for len(t.lines) > t.maxLines || (len(t.lines) > 1 && size > t.maxBytes) {
		size -= len(t.lines[0]) + 1
		t.lines = t.lines[1:]
	}
}

// String is the kept lines, an unfinished last line included, each
// indented by two spaces.
func (t *tail) String() string {
	lines := t.lines
	if len(t.partial) > 0 {
		lines = append(lines[:len(lines):len(lines)], string(t.partial))
	}
	if len(lines) > t.maxLines {
		lines = lines[len(lines)-t.maxLines:]
	}
	if len(lines) == 0 {
		return ""
	}
	return "  " + strings.Join(lines, "\n  ")
}
