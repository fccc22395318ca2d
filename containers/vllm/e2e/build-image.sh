#!/usr/bin/env bash
# build-image.sh VENV [IMAGE]: packages a vLLM virtual environment (made by
# install-venv.sh) as a local Docker image, for machines with no registry:
# a Debian bookworm root file system from debootstrap, the venv's Python
# interpreter at its original path, the venv at /opt/venv, imported with
# `docker import`. The image runs `vllm serve` like vLLM's own CPU image, so
# containers/vllm can start it (SERVEGATE_IMAGE=<IMAGE>).
#
# Needs root, debootstrap and a Docker daemon. The root file system is cached
# in $BUILD_DIR (default /var/tmp/servegate-vllm-image), never in the repo.
set -euo pipefail
venv=$(cd "${1:?usage: build-image.sh VENV [IMAGE]}" && pwd)
image=${2:-servegate/vllm-cpu:0.13.0-avx2}
build=${BUILD_DIR:-/var/tmp/servegate-vllm-image}
rootfs=$build/rootfs

if ! [ -x "$rootfs/usr/bin/g++" ]; then
	rm -rf "$rootfs"; mkdir -p "$build"
	# g++ for torch.compile's C++ code generation, libnuma and tcmalloc as
	# vLLM's CPU docs ask, the rest for the interpreter's extension modules.
	debootstrap --variant=minbase \
		--include=ca-certificates,libssl3,libffi8,libsqlite3-0,libbz2-1.0,liblzma5,zlib1g,libreadline8,libncursesw6,libnuma1,libgomp1,libtcmalloc-minimal4,g++,libc6-dev,procps,curl \
		bookworm "$rootfs"
	apt_clean=1
fi
[ -n "${apt_clean:-}" ] && rm -rf "$rootfs/var/cache/apt/archives"/*.deb "$rootfs/var/lib/apt/lists"/*

# The venv points at its interpreter by absolute path: copy it to the same path.
home=$(sed -n 's/^home = //p' "$venv/pyvenv.cfg")
prefix=$(dirname "$home")
mkdir -p "$rootfs$(dirname "$prefix")"
rm -rf "$rootfs$prefix"; cp -a "$prefix" "$rootfs$prefix"

# The venv moves to /opt/venv: its scripts' #! lines follow. Triton is left
# out (no GPU driver; vLLM runs without it).
rm -rf "$rootfs/opt/venv"; mkdir -p "$rootfs/opt/venv"
tar -C "$venv" --exclude='./lib/python3*/site-packages/triton' -cf - . | tar -C "$rootfs/opt/venv" -xf -
for f in "$rootfs"/opt/venv/bin/*; do
	[ -f "$f" ] && head -c 64 "$f" | grep -q "^#!$venv/bin/python" &&
		sed -i "1s|^#!$venv/bin/python|#!/opt/venv/bin/python|" "$f"
done
sed -i "s|$venv|/opt/venv|g" "$rootfs/opt/venv/pyvenv.cfg" "$rootfs/opt/venv/bin/activate"
chroot "$rootfs" /opt/venv/bin/python -c 'import torch, vllm._C' # fails the build early

tar -C "$rootfs" -cf - . | docker import \
	--change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'ENV VLLM_CPU_KVCACHE_SPACE=2' \
	--change 'WORKDIR /root' \
	--change 'EXPOSE 8000' \
	--change 'ENTRYPOINT ["vllm", "serve"]' \
	--change 'LABEL org.servegate.cpu-flags=avx2' \
	- "$image"
docker image inspect --format '{{.Id}} {{.Size}}' "$image"
