// Package deploy is a user repository whose deployment servegate gates:
// scenarios/chat.yaml runs vLLM on CPU, and a pull request changes a
// vllm serve flag. TestCompareDeployment (in scenarios/vllm) copies it out
// of the checkout, gives it a history and runs `go tool servegate compare`.
package deploy

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
