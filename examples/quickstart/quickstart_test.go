// Package quickstart is an example user repository: a scenarios folder and
// this file are all it takes to gate a pull request on serving latency.
//
//	go get github.com/servegate/servegate
//	go run github.com/servegate/servegate/ci/cmd/setup   # once per machine
//	go test ./...
package quickstart

import (
	"os"
	"testing"

	"github.com/servegate/servegate/benchtest"
)

// TestScenarios runs every scenario in scenarios/ as a subtest and asserts
// its SLOs.
func TestScenarios(t *testing.T) { benchtest.RunDir(t, "scenarios") }

// BenchmarkScenarios runs them as benchmarks, for benchstat and the gate:
// go test -run '^$' -bench . -count 6 > head.txt
func BenchmarkScenarios(b *testing.B) { benchtest.BenchDir(b, "scenarios") }

// TestMain shares each target among the tests and benchmarks, across -count
// repeats, and stops it at the end.
func TestMain(m *testing.M) { os.Exit(benchtest.Main(m)) }
