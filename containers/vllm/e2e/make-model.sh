#!/usr/bin/env bash
# make-model.sh DIR: writes a tiny Llama-architecture model for vLLM's
# --load-format dummy (random weights, no download): config.json with two
# layers and a small hidden size, the Llama-3 vocabulary (128,256 ids), from
# containers/vllm/testdata/tiny-llama (the e2e test uses the same file), and
# the real Llama-3 tokenizer files from the daulet/tokenizers Go module that
# servegate's fixtures already use, so token counts match our tokenizer.
set -euo pipefail
dir=${1:?usage: make-model.sh DIR}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
tokdir=$(cd "$repo" && go list -m -f '{{.Dir}}' github.com/daulet/tokenizers)/test/data
mkdir -p "$dir"
cp "$tokdir/Meta-Llama-3-8B-Instruct.json" "$dir/tokenizer.json"
# The module's tokenizer_config.json carries Llama-3's chat template.
cp "$tokdir/meta-llama-3-8b-instruct/tokenizer_config.json" "$dir/tokenizer_config.json"
chmod u+w "$dir"/*.json
cp "$repo/containers/vllm/testdata/tiny-llama/config.json" "$dir/config.json"
echo "tiny llama model in $dir"
