// Package simulator is a testcontainers module for servegate's
// vLLM-compatible simulator. Image builds the simulator's image from
// servegate's sources and caches it by content hash. Run starts it and
// waits until it serves. The server itself is internal: servegate's own
// commands run it in-process.
package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/internal/sim"
)

// Port is the simulator's port inside the container.
const Port = "8000/tcp"

// A Container is a running simulator container.
type Container struct {
	testcontainers.Container
}

// Truth is one request's ground truth as the simulator records it: when
// the request arrived and when each token left, in milliseconds.
type Truth = sim.Truth

// Run starts the simulator image img and waits until /health answers
// 200. Image builds img from servegate's sources, or finds it by its
// content hash. On error it returns the partial container with
// the error, so callers clean up with testcontainers.CleanupContainer before
// checking the error. It sets the hermetic testcontainers defaults for
// variables that are unset (see dockertest.SetDefaults). The container
// carries its owner's labels and is removed when the test process is
// interrupted (see dockertest.Owned).
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	dockertest.SetDefaults()
	o := options{timeout: 2 * time.Minute}
	for _, opt := range opts {
		if so, ok := opt.(Option); ok {
			if err := so(&o); err != nil {
				return nil, fmt.Errorf("run simulator: %w", err)
			}
		}
	}
	args := []string{"--port", strings.TrimSuffix(Port, "/tcp")}
	if o.profile != "" {
		args = append(args, "--profile", o.profile)
	}
	if o.slowdown > 0 {
		args = append(args, "--slowdown", strconv.FormatFloat(o.slowdown, 'g', -1, 64))
	}
	keys := make([]string, 0, len(o.knobs))
	for k := range o.knobs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+o.knobs[k])
	}
	const customTokenizer = "/custom-tokenizer.json"
	if o.tokenizer != "" {
		args = append(args, "--tokenizer", customTokenizer)
	}
	all := []testcontainers.ContainerCustomizer{
		testcontainers.WithExposedPorts(Port),
		testcontainers.WithCmd(args...),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/health").WithPort(Port).WithStartupTimeout(o.timeout)),
	}
	if o.tokenizer != "" {
		all = append(all, testcontainers.WithFiles(testcontainers.ContainerFile{
			HostFilePath: o.tokenizer, ContainerFilePath: customTokenizer, FileMode: 0o644}))
	}
	all = append(all, opts...)
	all = append(all, dockertest.Owned()) // last, so that no option drops it
	ctr, err := testcontainers.Run(ctx, img, all...)
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr}
	}
	if err != nil {
		return c, fmt.Errorf("run simulator: %w", err)
	}
	return c, nil
}

// BaseURL is the simulator's address from the host: http://host:port.
func (c *Container) BaseURL(ctx context.Context) (string, error) {
	u, err := c.PortEndpoint(ctx, Port, "http")
	if err != nil {
		return "", fmt.Errorf("simulator base url: %w", err)
	}
	return u, nil
}

// Truth fetches one request's ground truth from /debug/requests/{id}.
func (c *Container) Truth(ctx context.Context, id string) (Truth, error) {
	base, err := c.BaseURL(ctx)
	if err != nil {
		return Truth{}, err
	}
	return FetchTruth(ctx, http.DefaultClient, base, id)
}

// FetchTruth fetches one request's ground truth from a simulator at base.
func FetchTruth(ctx context.Context, hc *http.Client, base, id string) (Truth, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/requests/"+url.PathEscape(id), nil)
	if err != nil {
		return Truth{}, fmt.Errorf("fetch truth: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Truth{}, fmt.Errorf("fetch truth: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return Truth{}, fmt.Errorf("fetch truth %s: status %d: %s", id, resp.StatusCode, body)
	}
	var t Truth
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return Truth{}, fmt.Errorf("fetch truth %s: %w", id, err)
	}
	return t, nil
}
