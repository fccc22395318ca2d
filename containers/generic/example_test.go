package generic_test

import (
	"context"
	"fmt"
	"log"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/generic"
)

// A router built from its Dockerfile, in front of two simulator replicas.
// The router finds them in SERVEGATE_BACKENDS; the host reaches the router
// at BaseURL and each replica at BackendURLs.
func ExampleRun() {
	ctx := context.Background()
	ctr, err := generic.Run(ctx, generic.Spec{
		Build:    &generic.Build{Context: "examples/router"},
		Port:     8080,
		Env:      map[string]string{"ROUTER_POLICY": "least"},
		Wait:     generic.Wait{Path: "/health"},
		Backends: []generic.Backend{{Kind: "sim", Replicas: 2, Profile: "gpu-8b"}},
	})
	defer testcontainers.TerminateContainer(ctr) // the router, the replicas, their network
	if err != nil {
		log.Fatal(err) // names the Dockerfile, or carries the build or container log's tail
	}
	base, _ := ctr.BaseURL(ctx)
	backends, _ := ctr.BackendURLs(ctx)
	fmt.Println(base, backends, ctr.Aliases)
}
