package pipeline

import (
	"context"
	"fmt"
	"io"

	"github.com/servegate/servegate/benchtest/scenario"
)

// A Target is a running server under test.
type Target struct {
	// Kind is sim, inproc, vllm or url.
	Kind string
	// BaseURL is where requests go (http://host:port).
	BaseURL string
	// Model is the model id results name.
	Model string
	// ServedModelName is the model name requests send.
	ServedModelName string
	// Image is the container image, "" for inproc and url targets.
	Image string
	// CPUSet says how the CPUs are shared with the load generator, as
	// the benchfmt configuration records it: "target=0-1 client=2-3" when
	// a container target and this process got disjoint CPU sets
	// (internal/cpuset), else "shared".
	CPUSet string
	// ServeArgs are the flags servegate started the server with, where
	// they configure it (a vllm target's `vllm serve` flags: --max-num-seqs
	// and the like); the result JSON's server_config keeps them for
	// servegate sim calibrate. nil for other kinds.
	ServeArgs []string

	logs  func(ctx context.Context) (string, error)
	close func(ctx context.Context) error
}

// WithLogs returns t with the function that reads its server's log and
// the one that stops it (either may be nil).
func WithLogs(t Target, logs func(ctx context.Context) (string, error), close func(ctx context.Context) error) *Target {
	t.logs, t.close = logs, close
	return &t
}

// Logs returns the server's log ("" when the target has none).
func (t *Target) Logs(ctx context.Context) (string, error) {
	if t.logs == nil {
		return "", nil
	}
	return t.logs(ctx)
}

// Close stops the server (a no-op for url targets).
func (t *Target) Close(ctx context.Context) error {
	if t.close == nil {
		return nil
	}
	return t.close(ctx)
}

// starters start each target kind of scenario.TargetKinds (targets.go,
// targets_container.go).
var starters = map[string]func(ctx context.Context, spec scenario.Target, log io.Writer) (*Target, error){
	scenario.TargetURL:       startURL,
	scenario.TargetInproc:    startInproc,
	scenario.TargetSim:       startSim,
	scenario.TargetVLLM:      startVLLM,
	scenario.TargetContainer: startContainer,
}

// StartTarget starts the server spec describes (or, for a url target,
// checks which model it serves), within spec.StartTimeout (default
// scenario.DefaultStartTimeout). log receives progress lines such as an
// image build's; nil discards them. Close the Target when done.
func StartTarget(ctx context.Context, spec scenario.Target, log io.Writer) (*Target, error) {
	start, ok := starters[spec.Kind]
	if !ok {
		return nil, fmt.Errorf("start %s target: unknown kind (kinds: %v)", spec.Kind, scenario.TargetKinds)
	}
	if log == nil {
		log = io.Discard
	}
	if spec.StartTimeout <= 0 {
		spec.StartTimeout = scenario.Duration(scenario.DefaultStartTimeout)
	}
	sctx, cancel := context.WithTimeout(ctx, spec.StartTimeout.D())
	defer cancel()
	return start(sctx, spec, log)
}
