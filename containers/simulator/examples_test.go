package simulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/testcontainers/testcontainers-go"

	"github.com/servegate/servegate/containers/simulator"
)

// An in-process simulator behind httptest: the "instant" profile answers
// with no modelled latency.
func ExampleNew() {
	srv, err := simulator.New(simulator.Config{Profile: "instant"})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	body := `{"prompt": "Hello", "max_tokens": 3, "ignore_eos": true}`
	resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		panic(err)
	}
	fmt.Println(out.Usage.CompletionTokens, out.Choices[0].FinishReason)
	// Output: 3 length
}

// The simulator in a container, 10% slower than its profile, as a
// regression gate's target.
func ExampleRun() {
	ctx := context.Background()
	ctr, err := simulator.Run(ctx, simulator.WithProfile("gpu-8b"), simulator.WithSlowdown(1.10))
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
