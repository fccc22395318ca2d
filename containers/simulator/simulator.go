// Package simulator is servegate's vLLM-compatible simulator as a target:
// New runs it in-process (an http.Handler), Run starts it in a container
// with testcontainers-go, built locally from servegate's sources into a
// FROM-scratch image that is cached by the content hash of its sources.
//
// The server itself lives in the sim subpackage; the names here are aliases
// of it, and benchtest and cmd/servegate use only this package.
package simulator

import (
	"context"
	"io"
	"net"

	"github.com/servegate/servegate/internal/sim"
)

// Config says which server New builds; see sim.Config.
type Config = sim.Config

// Params are the simulator's knobs; see sim.Params.
type Params = sim.Params

// Server is an in-process simulator (an http.Handler); see sim.Server.
type Server = sim.Server

// Truth is one request's ground truth; see sim.Truth.
type Truth = sim.Truth

// Step is one engine step of the step log; see sim.Step.
type Step = sim.Step

// Tokenizer is what the simulator needs of a tokenizer; see sim.Tokenizer.
type Tokenizer = sim.Tokenizer

// FaultHeader is the per-request fault header; see sim.FaultHeader.
const FaultHeader = sim.FaultHeader

// New builds an in-process simulator and starts its engine. Close it when
// done.
func New(cfg Config) (*Server, error) { return sim.New(cfg) }

// LoadProfile returns the Params of a shipped profile or YAML file.
func LoadProfile(nameOrPath string) (Params, error) { return sim.LoadProfile(nameOrPath) }

// Profiles lists the shipped profiles.
func Profiles() []string { return sim.Profiles() }

// StampListener wraps a listener so that the ground truth records when
// each request reached the socket (intake_ms); serve it with ConnContext
// as the http.Server's ConnContext. See sim.StampListener.
func StampListener(ln net.Listener) net.Listener { return sim.StampListener(ln) }

// ConnContext goes with StampListener; see sim.ConnContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context { return sim.ConnContext(ctx, c) }

// Main runs the simulator as a command (flags, environment, serving until
// ctx is done) and returns its exit status; see sim.Main. `servegate sim`
// calls it.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return sim.Main(ctx, args, stdout, stderr)
}
