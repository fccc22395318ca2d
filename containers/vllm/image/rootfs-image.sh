#!/usr/bin/env bash
# rootfs-image.sh --base: makes the Debian root file system only (build.sh
# runs it while the venv installs).
# rootfs-image.sh VENV IMAGE [LABEL=VALUE...]: packages a vLLM virtual
# environment (made by install-venv.sh) as a local Docker image, for machines
# with no registry: a Debian bookworm root file system from debootstrap, the
# venv's Python interpreter at its original path, the venv at /opt/venv,
# imported with `docker import` and labelled with the given labels. The image
# runs `vllm serve` like vLLM's own CPU image, so containers/vllm can start
# it. build.sh calls it; it is not meant to be called alone.
#
# Left out of the image (DROP, space separated, default "triton nvidia"):
#   triton  the Triton compiler (a GPU kernel compiler; vLLM's CPU path runs
#           without it);
#   nvidia  the CUDA libraries PyPI's torch pulls in (site-packages/nvidia),
#           except the ones torch's own libraries are linked against, which
#           `import torch` loads even on CPU (see build.sh's README section).
# The image is checked after the drop: `import torch, vllm._C` must work.
#
# Needs root, debootstrap and a Docker daemon. The root file system is cached
# in $BUILD_DIR (default /var/tmp/servegate-vllm-image), never in the repo.
set -euo pipefail
build=${BUILD_DIR:-/var/tmp/servegate-vllm-image}
drop=${DROP-triton nvidia}
rootfs=$build/rootfs
here=$(cd "$(dirname "$0")" && pwd)

if ! [ -x "$rootfs/usr/bin/g++" ]; then
	rm -rf "$rootfs"; mkdir -p "$build"
	# g++ for torch.compile's C++ code generation, libnuma and tcmalloc as
	# vLLM's CPU docs ask, the rest for the interpreter's extension modules.
	debootstrap --variant=minbase \
		--include=ca-certificates,libssl3,libffi8,libsqlite3-0,libbz2-1.0,liblzma5,zlib1g,libreadline8,libncursesw6,libnuma1,libgomp1,libtcmalloc-minimal4,g++,libc6-dev,procps,curl \
		bookworm "$rootfs"
fi
rm -rf "$rootfs/var/cache/apt/archives"/*.deb "$rootfs/var/lib/apt/lists"/*
[ "${1:-}" = --base ] && exit 0

venv=$(cd "${1:?usage: rootfs-image.sh VENV IMAGE [LABEL=VALUE...]}" && pwd)
image=${2:?usage: rootfs-image.sh VENV IMAGE [LABEL=VALUE...]}
shift 2

# The venv points at its interpreter by absolute path: copy it to the same path.
home=$(sed -n 's/^home = //p' "$venv/pyvenv.cfg")
prefix=$(dirname "$home")
mkdir -p "$rootfs$(dirname "$prefix")"
rm -rf "$rootfs$prefix"; cp -a "$prefix" "$rootfs$prefix"

# The venv moves to /opt/venv: its scripts' #! lines follow.
site=$(cd "$venv" && ls -d lib/python3*/site-packages)
excludes=()
for d in $drop; do
	case $d in
	triton) excludes+=(--exclude="./$site/triton") ;;
	nvidia)
		# Every nvidia/<lib> directory no torch library is linked against.
		for lib in $("$here/cuda-libs.sh" unused "$venv"); do
			excludes+=(--exclude="./$site/nvidia/$lib")
		done ;;
	*) echo "rootfs-image.sh: DROP: unknown part $d (triton, nvidia)" >&2; exit 2 ;;
	esac
done
rm -rf "$rootfs/opt/venv"; mkdir -p "$rootfs/opt/venv"
tar -C "$venv" "${excludes[@]}" -cf - . | tar -C "$rootfs/opt/venv" -xf -
for f in "$rootfs"/opt/venv/bin/*; do
	[ -f "$f" ] && head -c 64 "$f" | grep -q "^#!$venv/bin/python" &&
		sed -i "1s|^#!$venv/bin/python|#!/opt/venv/bin/python|" "$f"
done
sed -i "s|$venv|/opt/venv|g" "$rootfs/opt/venv/pyvenv.cfg" "$rootfs/opt/venv/bin/activate"
chroot "$rootfs" /opt/venv/bin/python -c 'import torch, vllm._C, vllm.entrypoints.openai.api_server' # fails the build early
echo "root file system: $(du -sh --apparent-size "$rootfs" | cut -f1) ($(du -sh --apparent-size "$rootfs/opt/venv" | cut -f1) of it the venv)"

changes=(
	--change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
	--change 'ENV VLLM_CPU_KVCACHE_SPACE=2'
	--change 'WORKDIR /root'
	--change 'EXPOSE 8000'
	--change 'ENTRYPOINT ["vllm", "serve"]'
)
for l in "$@"; do changes+=(--change "LABEL $l"); done
tar -C "$rootfs" -cf - . | docker import "${changes[@]}" - "$image"
