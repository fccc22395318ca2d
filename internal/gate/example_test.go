package gate_test

import (
	"context"
	"fmt"

	"github.com/servegate/servegate/internal/gate"
)

// Run gates a pull request's results against its base's with the default
// policy (TTFT p99 may get 5% worse, goodput 5% worse) and lists the
// regressions.
func ExampleRun() {
	rep, err := gate.Run(context.Background(), gate.Config{
		Base: []string{"testdata/regression/base.txt"},
		Head: []string{"testdata/regression/head.txt"},
	})
	if err != nil {
		fmt.Println("bad input:", err)
		return
	}
	for _, c := range rep.Failures() {
		fmt.Printf("%s %s: %s\n", c.Benchmark, c.Unit, c.Reason)
	}
	fmt.Println("verdict:", rep.Verdict, "exit", rep.ExitCode())
	// Output:
	// Scenarios/scenario=chat-poisson ttft-p99-sec: regression: +27.82%, beyond tolerance +15% (p=0.000)
	// verdict: fail exit 1
}
