#!/usr/bin/env bash
# make-model.sh DIR: writes a tiny Llama-architecture model for vLLM's
# --load-format dummy (random weights, no download): config.json with two
# layers and a small hidden size, the Llama-3 vocabulary (128,256 ids), and
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
cat > "$dir/config.json" <<'JSON'
{
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "hidden_size": 256,
  "intermediate_size": 512,
  "num_hidden_layers": 2,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "head_dim": 64,
  "hidden_act": "silu",
  "max_position_embeddings": 8192,
  "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0,
  "vocab_size": 128256,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128009],
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "attention_bias": false,
  "mlp_bias": false
}
JSON
echo "tiny llama model in $dir"
