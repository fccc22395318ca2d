# servegate: see README.md.
.PHONY: setup test scenarios bench vet fmt

setup: ## build or fetch libtokenizers.a into .lib (cached by version)
	ci/setup-tokenizers.sh

test: ## the test command CI runs
	go test ./...

scenarios: ## the main job: every shipped scenario against the simulator container
	go test ./scenarios/...

vet:
	go vet ./...

fmt:
	gofmt -l -w .
