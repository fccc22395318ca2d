#!/usr/bin/env bash
# make-model.sh DIR: writes the tiny model (containers/vllm/tinyllama, the one
# vllm.TinyModelFiles serves) for a vLLM outside a container, served with
# --load-format dummy (random weights, no download): config.json (two layers,
# small hidden size, the Llama-3 vocabulary of 128,256 ids),
# tokenizer_config.json (Llama-3's chat template) and tokenizer.json, the
# Llama-3 tokenizer servegate bundles (internal/tokenizer/bundled/llama3.json.gz), so
# token counts match servegate's default tokenizer.
set -euo pipefail
dir=${1:?usage: make-model.sh DIR}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$dir"
cp "$repo"/containers/vllm/tinyllama/*.json "$dir"/
gunzip -c "$repo/internal/tokenizer/bundled/llama3.json.gz" > "$dir/tokenizer.json"
chmod u+w "$dir"/*.json
echo "tiny llama model in $dir"
