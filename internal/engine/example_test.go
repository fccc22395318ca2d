package engine_test

import (
	"fmt"
	"math"

	"github.com/servegate/servegate/internal/engine"
)

// Constant gaps (infinite burstiness) at 4 req/s: the requests leave a
// quarter of a second apart, the first one after one gap, as in vLLM.
func ExampleNewSchedule() {
	s, err := engine.NewSchedule(4, 4, math.Inf(1), nil, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Offsets)
	// Output: [250ms 500ms 750ms 1s]
}

// A linear ramp-up moves the rate from start to end with the request index.
func ExampleNewSchedule_rampUp() {
	s, err := engine.NewSchedule(5, 0, 1, &engine.RampUp{Strategy: "linear", StartRPS: 1, EndRPS: 5}, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Rates)
	// Output: [1 2 3 4 5]
}
