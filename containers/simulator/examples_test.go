package simulator_test

import (
	"context"
	"fmt"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/simulator"
)

// The simulator in a container, 10% slower than its profile, as a
// regression gate's target.
func ExampleRun() {
	ctx := context.Background()
	img, err := simulator.Image(ctx, nil)
	if err != nil {
		panic(err)
	}
	ctr, err := simulator.Run(ctx, img, simulator.WithProfile("gpu-8b"), simulator.WithSlowdown(1.10))
	defer testcontainers.TerminateContainer(ctr)
	if err != nil {
		panic(err)
	}
	base, err := ctr.BaseURL(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(base + "/v1/completions")
}
