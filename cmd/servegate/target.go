package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/dockertest"
	"github.com/servegate/servegate/containers/simulator"
	"github.com/servegate/servegate/containers/simulator/sim"
	"github.com/servegate/servegate/containers/vllm"
	"github.com/servegate/servegate/tokenizer"
)

// A benchTarget is the server a bench run talks to.
type benchTarget struct {
	// Kind is url, inproc, sim or vllm.
	Kind string
	// BaseURL is the server's root (http://host:port).
	BaseURL string
	// Image is the container image; empty for url and inproc.
	Image string
	// close stops what startTarget started; nil for url.
	close func(ctx context.Context) error
}

// Close stops the target's server, if servegate started one.
func (t *benchTarget) Close(ctx context.Context) error {
	if t.close == nil {
		return nil
	}
	return t.close(ctx)
}

// targetOptions configure a started target beyond the flags (from a
// scenario file).
type targetOptions struct {
	// Profile is a simulator profile's name or a YAML path; empty is the
	// default profile.
	Profile string
	// Knobs override the simulator profile's knobs by YAML key.
	Knobs map[string]string
	// Image is the vLLM image; empty is vllm.Image() ($SERVEGATE_IMAGE or
	// the pinned release).
	Image string
	// VLLMArgs are extra `vllm serve` arguments; VLLMEnv extra environment.
	VLLMArgs []string
	VLLMEnv  map[string]string
}

// startTarget starts the server --target asks for. servedModel is the
// model name requests carry; the simulator serves under that name.
func startTarget(ctx context.Context, kind, baseURL, model, servedModel string, tok *tokenizer.Tokenizer, so targetOptions, log io.Writer) (*benchTarget, error) {
	switch kind {
	case "", "url":
		return &benchTarget{Kind: "url", BaseURL: baseURL}, nil
	case "inproc":
		return startInproc(servedModel, tok, so)
	case "sim":
		dockertest.SetDefaults()
		return startSimContainer(ctx, servedModel, so, log)
	case "vllm":
		dockertest.SetDefaults()
		return startVLLMContainer(ctx, model, servedModel, so)
	}
	return nil, fmt.Errorf("start target: unknown kind %q", kind)
}

// startInproc serves the simulator from this process on a loopback port.
func startInproc(servedModel string, tok *tokenizer.Tokenizer, so targetOptions) (*benchTarget, error) {
	cfg := sim.Config{Profile: so.Profile, Set: map[string]string{}}
	for k, v := range so.Knobs {
		cfg.Set[k] = v
	}
	cfg.Set["model"] = servedModel
	if tok != nil {
		cfg.Tokenizer = tok // prompt counts then match the client's
	}
	srv, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("start inproc target: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go hs.Serve(ln)
	return &benchTarget{
		Kind:    "inproc",
		BaseURL: "http://" + ln.Addr().String(),
		close: func(ctx context.Context) error {
			err := srv.Close() // ends the streams in flight first
			return errors.Join(err, hs.Shutdown(ctx))
		},
	}, nil
}

// startSimContainer runs the simulator image (built locally when missing)
// with testcontainers.
func startSimContainer(ctx context.Context, servedModel string, so targetOptions, log io.Writer) (*benchTarget, error) {
	opts := []testcontainers.ContainerCustomizer{simulator.WithKnob("model", servedModel), simulator.WithBuildLog(log)}
	if so.Profile != "" {
		opts = append(opts, simulator.WithProfile(so.Profile))
	}
	for k, v := range so.Knobs {
		if k != "model" {
			opts = append(opts, simulator.WithKnob(k, v))
		}
	}
	c, err := simulator.Run(ctx, opts...)
	stop := func(context.Context) error { return testcontainers.TerminateContainer(c) } // nil-safe
	if err != nil {
		_ = stop(ctx)
		return nil, fmt.Errorf("start sim target: %w", err)
	}
	base, err := c.BaseURL(ctx)
	if err != nil {
		_ = stop(ctx)
		return nil, fmt.Errorf("start sim target: %w", err)
	}
	t := &benchTarget{Kind: "sim", BaseURL: base, close: stop}
	if info, err := c.Inspect(ctx); err == nil && info.Config != nil {
		t.Image = info.Config.Image
	}
	return t, nil
}

// startVLLMContainer runs a real vLLM CPU server serving model, with the
// host's Hugging Face cache mounted so the model downloads once.
func startVLLMContainer(ctx context.Context, model, servedModel string, so targetOptions) (*benchTarget, error) {
	opts := []testcontainers.ContainerCustomizer{vllm.WithModel(model)}
	if servedModel != model {
		opts = append(opts, vllm.WithServedModelName(servedModel))
	}
	if dir := hfHome(); dir != "" {
		opts = append(opts, vllm.WithHFCacheDir(dir))
	}
	if len(so.VLLMArgs) > 0 {
		opts = append(opts, vllm.WithExtraArgs(so.VLLMArgs...))
	}
	if len(so.VLLMEnv) > 0 {
		opts = append(opts, vllm.WithEnv(so.VLLMEnv))
	}
	c, err := vllm.Run(ctx, so.Image, opts...)
	stop := func(context.Context) error { return testcontainers.TerminateContainer(c) } // nil-safe
	if err != nil {
		if c != nil {
			err = fmt.Errorf("%w\nlast lines of the vllm log:\n%s", err, c.LogTail())
		}
		_ = stop(ctx)
		return nil, fmt.Errorf("start vllm target: %w", err)
	}
	base, err := c.BaseURL(ctx)
	if err != nil {
		_ = stop(ctx)
		return nil, fmt.Errorf("start vllm target: %w", err)
	}
	img := so.Image
	if img == "" {
		img = vllm.Image()
	}
	return &benchTarget{Kind: "vllm", BaseURL: base, Image: img, close: stop}, nil
}

// hfHome is the host's Hugging Face home (the directory holding hub/), or
// "" when there is none yet.
func hfHome() string {
	dir := os.Getenv("HF_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "huggingface")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return dir
}
