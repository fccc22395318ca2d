#!/usr/bin/env bash
# record.sh BASE_URL MODEL OUTDIR: records a real vLLM server's wire format
# with curl (response headers and raw body bytes, streams included) into
# OUTDIR, one <case>.request.json / .headers.txt / .body.txt triple per case.
# The server must serve a model whose tokenizer is Llama-3 (make-model.sh).
set -euo pipefail
base=${1:?usage: record.sh BASE_URL MODEL OUTDIR}
model=${2:?model}
out=${3:?outdir}
mkdir -p "$out"

# post NAME PATH JSON [CURL-ARGS...]: one POST, headers and body kept byte
# for byte.
post() {
	local name=$1 path=$2 body=$3
	shift 3
	printf '%s\n' "$body" > "$out/$name.request.json"
	curl -sS -N -o "$out/$name.body.txt" -D "$out/$name.headers.txt" "$@" \
		-H 'Content-Type: application/json' -X POST --data-binary "$body" "$base$path"
	# Date and request-specific ids differ on every run; keep only stable headers.
	sed -i -e '/^[Dd]ate:/d' "$out/$name.headers.txt"
}

# get NAME PATH: one GET.
get() {
	local name=$1 path=$2
	curl -sS -o "$out/$name.body.txt" -D "$out/$name.headers.txt" "$base$path"
	sed -i -e '/^[Dd]ate:/d' "$out/$name.headers.txt"
}

prompt='The quick brown fox jumps over the lazy dog. Tell me a story about it.'
msgs='[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"'"$prompt"'"}]'

# Completions, the request shape of vllm bench serve's openai-completions backend.
post completions-stream-usage /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":8,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'
post completions-stream-continuous-usage /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":8,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}'
post completions-stream-no-usage /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":4,"temperature":0,"ignore_eos":true,"stream":true}'
post completions-nonstream /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":8,"temperature":0,"ignore_eos":true}'
post completions-stream-logprobs /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":3,"temperature":0,"ignore_eos":true,"logprobs":1,"stream":true,"stream_options":{"include_usage":true}}'

# vllm bench serve sends x-request-id; vLLM 0.13 uses it in the response id
# (it echoes the header only with --enable-request-id-headers).
post completions-stream-request-id /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":2,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' \
	-H 'x-request-id: bench-0123abcd-0'
post chat-stream-request-id /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_completion_tokens":2,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' \
	-H 'x-request-id: bench-0123abcd-1'
post completions-stream-n2 /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":2,"n":2,"temperature":1,"seed":7,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'

# Logprobs and n>1 beyond the defaults of vllm bench serve: the wire shapes
# the simulator must also produce.
post completions-stream-logprobs3 /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":2,"temperature":0,"ignore_eos":true,"logprobs":3,"stream":true}'
post completions-nonstream-logprobs /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":2,"temperature":0,"ignore_eos":true,"logprobs":2}'
post chat-stream-logprobs /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_completion_tokens":2,"temperature":0,"ignore_eos":true,"logprobs":true,"top_logprobs":2,"stream":true,"stream_options":{"include_usage":true}}'
post chat-nonstream-logprobs /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_completion_tokens":2,"temperature":0,"ignore_eos":true,"logprobs":true,"top_logprobs":1}'
post chat-stream-n2 /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_completion_tokens":2,"n":2,"temperature":1,"seed":7,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'
post completions-nonstream-n2 /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":2,"n":2,"temperature":1,"seed":7,"ignore_eos":true}'

# Chat, the request shape of vllm bench serve's openai-chat backend.
post chat-stream-usage /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_completion_tokens":8,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'
post chat-stream-continuous-usage /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_completion_tokens":8,"temperature":0,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}'
post chat-stream-no-usage /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_tokens":4,"temperature":0,"ignore_eos":true,"stream":true}'
post chat-nonstream /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_completion_tokens":8,"temperature":0,"ignore_eos":true}'

# Errors: an output budget larger than the context, an unknown model, bad JSON.
post error-max-tokens-nonstream /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":1000000}'
post error-max-tokens-stream /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$prompt"'","max_tokens":1000000,"stream":true,"stream_options":{"include_usage":true}}'
post error-chat-max-tokens-stream /v1/chat/completions \
	'{"model":"'"$model"'","messages":'"$msgs"',"max_completion_tokens":1000000,"stream":true,"stream_options":{"include_usage":true}}'
long=$(printf 'hello %.0s' $(seq 5000))
post error-prompt-too-long-stream /v1/completions \
	'{"model":"'"$model"'","prompt":"'"$long"'","max_tokens":4,"stream":true}'
post error-unknown-model /v1/completions \
	'{"model":"no-such-model","prompt":"hi","max_tokens":4}'
post error-unknown-model-stream /v1/chat/completions \
	'{"model":"no-such-model","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}'
post error-bad-json /v1/completions '{"model":'

# Readiness and metadata.
get models /v1/models
get version /version
get health /health
get ping /ping
get metrics /metrics
echo "recorded $(ls "$out"/*.body.txt | wc -l) cases into $out"
