package vllm_test

import (
	"context"
	"fmt"
	"log"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/vllm"
)

// ExampleRun starts vLLM's CPU image serving a small model from the Hugging
// Face hub, with the cache on the host so the model downloads once. (Not run
// by go test: it needs an AVX512 machine and the network.)
func ExampleRun() {
	ctx := context.Background()
	c, err := vllm.Run(ctx, vllm.Image(),
		vllm.WithModel("Qwen/Qwen2.5-0.5B-Instruct"),
		vllm.WithServedModelName("qwen"),
		vllm.WithMaxModelLen(4096),
		vllm.WithKVCacheSpace(4),
		vllm.WithHFCacheDir("/var/cache/huggingface"),
	)
	defer func() {
		if err := testcontainers.TerminateContainer(c); err != nil {
			log.Printf("terminate: %v", err)
		}
	}()
	if err != nil {
		log.Printf("run vllm: %v", err) // a *vllm.CPUError names missing CPU flags
		return
	}
	url, err := c.BaseURL(ctx)
	if err != nil {
		log.Printf("base url: %v", err)
		return
	}
	fmt.Println(url+"/v1/completions", c.Model)
}
