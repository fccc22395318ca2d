package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/benchtest/tokenizer"
	"github.com/servegate/servegate/containers/simulator"
	"github.com/servegate/servegate/containers/simulator/sim"
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

// simOptions configure a simulator target (from a scenario file).
type simOptions struct {
	// Profile is a shipped profile's name or a YAML path; empty is the
	// default profile.
	Profile string
	// Knobs override the profile's knobs by YAML key.
	Knobs map[string]string
}

// startTarget starts the server --target asks for. servedModel is the
// model name requests carry; the simulator serves under that name.
func startTarget(ctx context.Context, kind, baseURL, servedModel string, tok *tokenizer.Tokenizer, so simOptions, log io.Writer) (*benchTarget, error) {
	switch kind {
	case "", "url":
		return &benchTarget{Kind: "url", BaseURL: baseURL}, nil
	case "inproc":
		return startInproc(servedModel, tok, so)
	case "sim":
		return startSimContainer(ctx, servedModel, so, log)
	case "vllm":
		return nil, errors.New("start vllm target: not implemented in servegate bench yet; start vLLM yourself and use --base-url (or run the scenario tests with SERVEGATE_TARGET=vllm)")
	}
	return nil, fmt.Errorf("start target: unknown kind %q", kind)
}

// startInproc serves the simulator from this process on a loopback port.
func startInproc(servedModel string, tok *tokenizer.Tokenizer, so simOptions) (*benchTarget, error) {
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
func startSimContainer(ctx context.Context, servedModel string, so simOptions, log io.Writer) (*benchTarget, error) {
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
	stop := func(context.Context) error {
		if c == nil {
			return nil
		}
		return testcontainers.TerminateContainer(c)
	}
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
