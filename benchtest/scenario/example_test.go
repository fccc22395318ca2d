package scenario_test

import (
	"fmt"

	"github.com/servegate/servegate/benchtest/scenario"
)

func ExampleParse() {
	src := `
name: chat
backend: openai-chat
load:
  request_rate: 8
slo:
  bounds: ["p99_ttft_ms <= 800", "failed == 0"]
`
	scs, err := scenario.Parse("chat.yaml", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	sc := scs[0]
	fmt.Println(sc.Name, sc.Target.Kind, sc.Endpoint, sc.Load.RequestRate, sc.Dataset.NumPrompts)
	fmt.Println(sc.SLO.Bounds)

	_, err = scenario.Parse("bad.yaml", []byte("name: chat\nload:\n  request_rate: -1\n"))
	fmt.Println(err)
	// Output:
	// chat sim /v1/chat/completions 8 1000
	// [p99_ttft_ms <= 800 failed == 0]
	// bad.yaml:3: load.request_rate: must be a positive rate in requests/s (or inf for all at once), got -1
}

func ExampleSLO_Check() {
	slo := scenario.SLO{Bounds: []scenario.Bound{
		{Metric: "p99_ttft_ms", Op: "<=", Value: 800},
		{Metric: "failed", Op: "==", Value: 0},
	}}
	summary := map[string]float64{"p99_ttft_ms": 912.5, "failed": 0}
	for _, v := range slo.Check(func(name string) (float64, bool) { x, ok := summary[name]; return x, ok }) {
		fmt.Println(v.Bound, v.Measured, v.Pass)
	}
	// Output:
	// p99_ttft_ms <= 800 912.5 false
	// failed == 0 0 true
}
