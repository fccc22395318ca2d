// Package gated is an example user repository whose pull requests
// servegate gates: a server of its own, built from its Dockerfile, and a
// scenario that measures it. Gate a change from the module's root:
//
//	go get -tool github.com/servegate/servegate/cmd/servegate
//	go tool servegate compare -prepare 'CGO_ENABLED=0 go build -o server/server ./server' origin/main
package gated

import (
	"os"
	"testing"

	"github.com/servegate/servegate/benchtest"
)

// BenchmarkScenarios runs every scenario of scenarios/ for servegate
// compare, which runs it in pairs of base and head.
func BenchmarkScenarios(b *testing.B) { benchtest.BenchDir(b, "scenarios") }

// TestMain shares each target among the benchmarks and stops it at the end.
func TestMain(m *testing.M) { os.Exit(benchtest.Main(m)) }
