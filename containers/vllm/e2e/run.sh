#!/usr/bin/env bash
# run.sh: servegate against a real vLLM 0.13.0 on CPU (`make e2e-vllm`).
#
#  1. builds (or finds cached) the local image for this CPU and its venv
#     (../image/build.sh, `make vllm-image`; VLLM_WHEEL forces a wheel);
#  2. TestE2EContainer: the containers/vllm module starts that image, the
#     engine streams completions and chat through it (no failures, usage =
#     max_tokens with ignore_eos, one token without);
#  3. side by side: a vllm serve from the same venv on 127.0.0.1, our engine
#     (TestE2EBench) and `vllm bench serve` on the same JSONL dataset, for the
#     completions and chat backends, and the table (TestE2ECompare).
#
# Settings: VLLM_WHEEL, VLLM_VENV, SERVEGATE_IMAGE, SERVEGATE_E2E_OUT (results),
# SERVEGATE_E2E_NUM_PROMPTS / _INPUT_LEN / _OUTPUT_LEN / _MAX_CONCURRENCY,
# VLLM_PORT, and
# E2E_STEPS (default "container bench") to run a part only, E2E_ORDER
# (default "servegate vllm") for which tool runs first.
#
# The server runs with prefix caching off: both tools send the same prompts,
# and with the cache on whichever runs second skips most of its prefill.
# Takes about 15 minutes the first time on 2 cores, mostly installing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
eval "$("$here/../image/build.sh" --info)" # image, alias, venv, isa, wheel
image=${SERVEGATE_IMAGE:-$image}
out=${SERVEGATE_E2E_OUT:-/var/tmp/servegate-e2e-vllm}
port=${VLLM_PORT:-8021}
steps=${E2E_STEPS:-container bench}
order=${E2E_ORDER:-servegate vllm}
export SERVEGATE_E2E_NUM_PROMPTS=${SERVEGATE_E2E_NUM_PROMPTS:-100}
export SERVEGATE_E2E_INPUT_LEN=${SERVEGATE_E2E_INPUT_LEN:-128}
export SERVEGATE_E2E_OUTPUT_LEN=${SERVEGATE_E2E_OUTPUT_LEN:-32}
mkdir -p "$out"
cd "$repo"

"$here/../image/install-venv.sh" "$venv" "$wheel" # the venv build.sh packages; vllm serve and vllm bench serve run from it

if [[ " $steps " == *" container "* ]]; then
	[ -n "${SERVEGATE_IMAGE:-}" ] || "$here/../image/build.sh"
	SERVEGATE_E2E_VLLM=1 SERVEGATE_IMAGE=$image \
		go test ./containers/vllm/ -run '^TestE2EContainer$' -v -count=1 -timeout 40m
fi

if [[ " $steps " == *" bench "* ]]; then
	"$here/make-model.sh" "$out/tiny-llama"
	VLLM_CPU_KVCACHE_SPACE=2 "$venv/bin/vllm" serve "$out/tiny-llama" --served-model-name tiny-llama \
		--load-format dummy --dtype float32 --max-model-len 4096 --no-enable-prefix-caching \
		--host 127.0.0.1 --port "$port" > "$out/vllm-serve.log" 2>&1 &
	server=$!
	trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
	for _ in $(seq 600); do
		curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
		kill -0 $server 2>/dev/null || { tail -50 "$out/vllm-serve.log"; exit 1; }
		sleep 1
	done
	rm -f "$out"/dataset.jsonl "$out"/*-vllm.json "$out"/*-openai-chat.json
	export SERVEGATE_E2E_VLLM=1 SERVEGATE_E2E_VLLM_URL=http://127.0.0.1:$port SERVEGATE_E2E_OUT=$out
	go test ./containers/vllm/ -run '^TestE2EDataset$' -count=1
	for backend in vllm openai-chat; do
		endpoint=/v1/completions
		[ "$backend" = openai-chat ] && endpoint=/v1/chat/completions
		cmd=("$venv/bin/vllm" bench serve --backend "$backend" --endpoint "$endpoint"
			--base-url "http://127.0.0.1:$port" --model tiny-llama --tokenizer "$out/tiny-llama"
			--dataset-name custom --dataset-path "$out/dataset.jsonl" --skip-chat-template --disable-shuffle
			--num-prompts "$SERVEGATE_E2E_NUM_PROMPTS" --custom-output-len "$SERVEGATE_E2E_OUTPUT_LEN"
			--ignore-eos --seed 0 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99
			--save-result --result-dir "$out" --result-filename "vllm-$backend.json")
		[ -n "${SERVEGATE_E2E_MAX_CONCURRENCY:-}" ] && cmd+=(--max-concurrency "$SERVEGATE_E2E_MAX_CONCURRENCY")
		for tool in $order; do
			if [ "$tool" = servegate ]; then
				SERVEGATE_E2E_BACKEND=$backend go test ./containers/vllm/ -run '^TestE2EBench$' -v -count=1 -timeout 30m
			else
				echo "+ ${cmd[*]}" | tee "$out/vllm-bench-$backend.cmd"
				"${cmd[@]}" 2>&1 | tee "$out/vllm-bench-$backend.log" | tail -30
			fi
		done
		SERVEGATE_E2E_BACKEND=$backend go test ./containers/vllm/ -run '^TestE2ECompare$' -v -count=1
	done
	cat "$out"/compare-*.md
fi
